// Tests for search budgets as a count or a fraction (search_settings, COTUNE_SEARCH_BUDGET) and for
// the strategy a budget picks when COTUNE_SEARCH is unset.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cotune/search/search.hpp>

#include "synthetic_space.hpp"

using namespace cotune;

TEST_CASE("a fraction budget evaluates that share of the candidates, rounded up", "[search][budget]") {
  const auto cs = cotune_test::synthetic_configs(); // 1120
  const search_space s(cs);
  const auto count = [&](search_settings st) {
    return run_search(random_search{}, s, st, cotune_test::synthetic_evaluator{&cs, std::mt19937_64(1)}).size();
  };
  CHECK(count({.fraction = 0.25}) == 280);
  CHECK(count({.fraction = 0.1}) == 112);
  CHECK(count({.fraction = 0.001}) == 2); // 1.12, rounded up
  CHECK(count({.fraction = 1.0}) == 1120);
  CHECK(count({.evaluations = 7, .fraction = 0.5}) == 7); // a count wins over a fraction
  CHECK(search_settings{.fraction = 0.25}.limited());
  CHECK_FALSE(search_settings{}.limited());
  for (double bad : {1.5, -0.25, std::numeric_limits<double>::quiet_NaN()}) {
    INFO(bad);
    CHECK_THROWS_WITH(count({.fraction = bad}), Catch::Contains("fraction") && Catch::Contains("(0, 1]"));
  }
}

TEST_CASE("COTUNE_SEARCH_BUDGET takes a count or a percentage, and says what it takes", "[search][budget][knobs]") {
  CHECK(detail::search_budget_of("64").evaluations == 64);
  CHECK(detail::search_budget_of("0").evaluations == 0);
  CHECK(detail::search_budget_of("25%").fraction == Approx(0.25));
  CHECK(detail::search_budget_of("100%").fraction == Approx(1.0));
  CHECK(detail::search_budget_of("12.5%").fraction == Approx(0.125));
  for (const char* bad : {"0%", "150%", "abc", "-3", "12.5", "%", "25 %"}) {
    INFO(bad);
    CHECK_THROWS_AS(detail::search_budget_of(bad), knob_error);
    CHECK_THROWS_WITH(detail::search_budget_of(bad), Catch::Contains("COTUNE_SEARCH_BUDGET") &&
                                                         Catch::Contains(bad) && Catch::Contains("25%"));
  }
  CHECK_THROWS_WITH(detail::search_budget_of("150%"), Catch::Contains("at most 100%"));
  CHECK_THROWS_WITH(detail::search_budget_of("0%"), Catch::Contains("above 0%"));
  CHECK_THROWS_AS(search_knobs().budget.scoped("abc"), knob_error);
}

TEST_CASE("the knobs complete a budget: the options' count or fraction wins, else the knob's", "[search][budget][knobs]") {
  auto budget = search_knobs().budget.scoped("10%");
  const auto unset = search_settings_from_knobs(std::nullopt);
  CHECK(unset.fraction == Approx(0.1));
  CHECK(unset.evaluations == 0);
  const auto counted = search_settings_from_knobs(search_settings{.evaluations = 5});
  CHECK(counted.evaluations == 5);
  CHECK(counted.fraction == 0);
  const auto shared = search_settings_from_knobs(search_settings{.fraction = 0.5});
  CHECK(shared.fraction == Approx(0.5));
  CHECK(shared.evaluations == 0);
  auto count = search_knobs().budget.scoped("40");
  CHECK(search_settings_from_knobs(std::nullopt).evaluations == 40);
}

TEST_CASE("COTUNE_SEARCH unset: exhaustive without a budget, bayes-local with one", "[search][budget][registry]") {
  REQUIRE_FALSE(search_knobs().strategy.is_set());
  CHECK(search_from_knobs()->name() == "exhaustive");
  CHECK(search_from_knobs(search_settings{.fraction = 0.25})->name() == "bayes-local");
  CHECK(search_from_knobs(search_settings{.evaluations = 10})->name() == "bayes-local");
  auto chosen = search_knobs().strategy.scoped("exhaustive"); // named: a budget does not override it
  CHECK(search_from_knobs(search_settings{.evaluations = 10})->name() == "exhaustive");
}

namespace {

/// A small replayed table with a categorical selector: 4 unrelated methods x BLOCK 5 x WARPS 4 x
/// VEC 3 = 240 configs. Method 0 is the fastest near its own optimum; method 3 is nearly as fast over a
/// broad region; methods 1 and 2, between them by number, are slow.
struct selector_table {
  std::vector<config> configs;
  std::vector<double> truth;
  selector_table() {
    const double base[] = {1.0, 1.7, 1.45, 1.07}, curve[] = {0.05, 0.05, 0.05, 0.03};
    const double opt[4][3] = {{1, 1, 2}, {4, 3, 0}, {3, 2, 1}, {4, 3, 0}};
    for (int m = 0; m < 4; ++m)
      for (int b = 0; b < 5; ++b)
        for (int w = 0; w < 4; ++w)
          for (int v = 0; v < 3; ++v) {
            configs.push_back(config{{"METHOD", m}, {"BLOCK", 16 << b}, {"WARPS", 1 << w}, {"VEC", 1 << v}});
            const double d = (b - opt[m][0]) * (b - opt[m][0]) + (w - opt[m][1]) * (w - opt[m][1]) + (v - opt[m][2]) * (v - opt[m][2]);
            truth.push_back(base[m] * (1 + curve[m] * d + 0.01 * std::sin(3 * b + 2 * w + v + m)));
          }
  }
  /// Mean regret over `seeds` seeded searches with a `fraction` budget and 1% noise.
  double mean_regret(const search_strategy& s, const search_space& sp, double fraction, int seeds) const {
    const double best = *std::min_element(truth.begin(), truth.end());
    double sum = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      std::mt19937_64 noise(static_cast<std::uint64_t>(seed) * 31);
      const auto h = run_search(s, sp, {.fraction = fraction, .seed = static_cast<std::uint64_t>(seed)}, [&](std::size_t i) {
        const double u = static_cast<double>(noise() >> 11) * 0x1.0p-53 - 0.5;
        return search_outcome{i, truth[i] * (1 + 0.0346 * u), true};
      });
      std::size_t pick = h.front().index;
      double measured = INFINITY;
      for (const auto& o : h)
        if (o.time_ms < measured) {
          measured = o.time_ms;
          pick = o.index;
        }
      sum += truth[pick] / best - 1;
    }
    return sum / seeds;
  }
};

} // namespace

TEST_CASE("the default budgeted strategy is never worse than random on a small categorical space",
          "[search][budget][default]") {
  const selector_table t;
  const search_space sp(t.configs, {{"METHOD", param_kind::categorical}});
  const auto chosen = search_from_knobs(search_settings{.fraction = 0.1});
  REQUIRE(chosen->name() == "bayes-local");
  for (double fraction : {0.1, 0.25}) {
    INFO("budget " << fraction);
    const double def = t.mean_regret(*chosen, sp, fraction, 60), random = t.mean_regret(random_search{}, sp, fraction, 60);
    INFO("default " << def << ", random " << random);
    CHECK(def <= random);
    if (fraction > 0.2) CHECK(def < 0.25 * random); // not merely a tie once the local steps have room
  }
}
