// Tests for cotune/tune/measure_strategy.hpp: which budget the first pass gets and who reaches the finals.

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/measure_strategy.hpp>

using namespace cotune;

namespace {

candidate_result measured(int i, double median) {
  candidate_result r{config{{"I", i}}};
  r.status = candidate_status::ok;
  r.time = {median, median, median};
  return r;
}

candidate_result failed(int i) {
  candidate_result r{config{{"I", i}}};
  r.status = candidate_status::compile_error;
  return r;
}

const bench_options full{.warmup_ms = 25, .rep_ms = 100};

} // namespace

TEST_CASE("exhaustive measurement gives every candidate the full budget once", "[tune][measure_strategy]") {
  const exhaustive_measure m;
  const auto pass = m.first_pass(full, 16);
  CHECK(pass.rep_ms == full.rep_ms);
  CHECK(pass.warmup_ms == full.warmup_ms);
  CHECK(m.finalists({measured(0, 1), measured(1, 2), measured(2, 3)}, full).empty());
}

TEST_CASE("screening: a short first pass, then the close ones, at most keep, in config order", "[tune][measure_strategy]") {
  const screening_measure m(10, 0.15, 2);
  const auto pass = m.first_pass(full, 5);
  CHECK(pass.rep_ms == 10);
  CHECK(pass.warmup_ms == 2.5);
  CHECK(pass.required_samples == std::optional<std::size_t>(3)); // a slow kernel is not judged by one run
  CHECK(screening_measure(10, 0.15, 2, 5).first_pass(full, 5).required_samples == std::optional<std::size_t>(5));
  CHECK_FALSE(exhaustive_measure().first_pass(full, 5).required_samples);
  // 1.0 is best; 1.1 and 1.14 are within 15%; 1.2 is not; keep = 2 keeps the best two by screening.
  const std::vector<candidate_result> rs{measured(0, 1.14), failed(1), measured(2, 1.0), measured(3, 1.2),
                                         measured(4, 1.1)};
  CHECK(m.finalists(rs, full) == std::vector<std::size_t>{2, 4});
  // A lone finalist is still measured again (its stored timing is a full-budget one).
  CHECK(m.finalists({measured(0, 1), measured(1, 5), measured(2, 9)}, full) == std::vector<std::size_t>{0});
  // Nothing measured: no finals.
  CHECK(m.finalists({failed(0), failed(1), failed(2)}, full).empty());
}

TEST_CASE("screening is off for two candidates or fewer and when the budget is already short", "[tune][measure_strategy]") {
  const screening_measure m(10, 0.15, 4);
  CHECK(m.first_pass(full, 2).rep_ms == full.rep_ms);
  CHECK(m.finalists({measured(0, 1), measured(1, 1.01)}, full).empty());
  const bench_options short_budget{.warmup_ms = 1, .rep_ms = 15};
  CHECK(m.first_pass(short_budget, 8).rep_ms == 15);
  CHECK(m.finalists({measured(0, 1), measured(1, 1), measured(2, 1)}, short_budget).empty());
  const screening_measure off(0, 0.15, 4);
  CHECK(off.first_pass(full, 8).rep_ms == full.rep_ms);
}

namespace {
/// A user's strategy that names candidates it should not: failed ones, out of range, twice, unsorted.
class careless_measure final : public measure_strategy {
protected:
  bench_options do_first_pass(const bench_options& f, std::size_t) const override { return f; }
  std::vector<std::size_t> do_finalists(const std::vector<candidate_result>&, const bench_options&) const override {
    return {7, 2, 1, 2, 99, 0};
  }
};
} // namespace

TEST_CASE("finals never include a failed, unknown or repeated candidate, whatever a strategy says", "[tune][measure_strategy]") {
  const careless_measure m;
  CHECK(m.finalists({measured(0, 1), failed(1), measured(2, 3)}, full) == std::vector<std::size_t>{0, 2});
}

// ---- fair finals (tune/interleaved_finals.hpp) ----

namespace {
/// Records which run it timed, in order, and returns one sample per call (its call number).
struct recording_bench {
  std::vector<int> order;
  std::vector<bench_options> asked;
  std::vector<double> bench(const std::function<void()>& fn, const bench_options& o) {
    fn();
    asked.push_back(o);
    return {static_cast<double>(asked.size()), static_cast<double>(asked.size()) + 0.5};
  }
};
} // namespace

TEST_CASE("finals run interleaved, A B C A B C, each round a share of the budget", "[tune][measure_strategy][finals]") {
  recording_bench b;
  std::vector<std::function<void()>> runs;
  for (int k = 0; k < 3; ++k) runs.push_back([&b, k] { b.order.push_back(k); });
  const auto out = measure_interleaved(b, runs, full, 4);
  CHECK(b.order == std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  REQUIRE(b.asked.size() == 12);
  CHECK(b.asked[0].rep_ms == 25);
  CHECK(b.asked[0].warmup_ms == 25);
  CHECK(b.asked[5].warmup_ms == 25.0 / 4);
  CHECK(b.asked[5].mode == return_mode::all);
  CHECK(b.asked[5].quantiles.empty());
  REQUIRE(out.size() == 3);
  // Run 0's samples: calls 1, 4, 7, 10 (and +0.5 each): median 5.75.
  REQUIRE(out[0].time);
  CHECK((*out[0].time)[0] == Approx(5.75));
  // Its noise is that of all 8 samples, the drift between rounds included: mean 5.75, squared deviations 90.5.
  CHECK(out[0].samples == 8);
  CHECK(out[0].rsd == Approx(std::sqrt(90.5 / 7) / 5.75));
}

TEST_CASE("finals settle first: untimed rounds until every median holds within 1%, then the timed rounds",
          "[tune][measure_strategy][finals]") {
  // Medians per untimed round, as a GPU's clocks come up: 2.0, 1.2, 1.005, 1.0 (within 1% of 1.005: settled).
  struct settling_bench {
    std::vector<double> medians{2.0, 1.2, 1.005, 1.0};
    std::vector<std::size_t> untimed; ///< per finalist
    std::size_t timed = 0;
    std::vector<double> bench(const std::function<void()>& fn, const bench_options& o) {
      fn();
      if (o.quantiles == std::vector<double>{0.5}) {
        const std::size_t round = untimed.size() / 2;
        untimed.push_back(round);
        return {medians.at(std::min(round, medians.size() - 1))};
      }
      ++timed;
      return {1.0, 1.0, 1.0};
    }
  } b;
  std::vector<std::function<void()>> runs{[] {}, [] {}};
  const auto out = measure_interleaved(b, runs, full, 3, 1e9);
  CHECK(b.untimed.size() == 2 * 4);
  CHECK(b.timed == 2 * 3);
  REQUIRE(out[0].time);
  CHECK((*out[0].time)[0] == 1.0);
  CHECK(out[0].samples == 9); // the timed rounds' samples only
  // Off (0), and the default of measure_interleaved: no untimed round.
  settling_bench off;
  (void)measure_interleaved(off, runs, full, 3, 0);
  CHECK(off.untimed.empty());
  // A budget spent after the first round stops settling there.
  settling_bench short_budget;
  (void)measure_interleaved(short_budget, runs, full, 3, 1e-9);
  CHECK(short_budget.untimed.size() == 2);
}

TEST_CASE("a finalist that throws leaves the later rounds and is reported", "[tune][measure_strategy][finals]") {
  recording_bench b;
  int calls = 0;
  std::vector<std::function<void()>> runs{[] {}, [&] {
                                            if (++calls == 2) throw launch_error("boom");
                                          }};
  const auto out = measure_interleaved(b, runs, full, 3);
  CHECK(out[0].time);
  CHECK(out[1].failure);
  CHECK(calls == 2);
}

TEST_CASE("among interleaved finalists a tie within the measured noise goes to the steadier config then the earlier", "[tune][measure_strategy][finals]") {
  auto final_of = [](int i, timings t) {
    candidate_result r = measured(i, t[0]);
    r.time = t;
    r.interleaved = true;
    return r;
  };
  // 1.00 vs 1.02 with a spread of +-0.05 each: within the noise and equally steady, so the earlier config wins.
  CHECK(select_best({final_of(0, {1.02, 0.97, 1.07}), final_of(1, {1.00, 0.95, 1.05})}) == 0u);
  // 1.00 vs 1.20: a real difference, the faster wins.
  CHECK(select_best({final_of(0, {1.20, 1.15, 1.25}), final_of(1, {1.00, 0.95, 1.05})}) == 1u);
  // Spreads within a factor of two count as equally steady: the earlier config.
  CHECK(select_best({final_of(0, {1.02, 0.96, 1.07}), final_of(1, {1.00, 0.97, 1.03})}) == 0u);
  // A noisy earlier finalist tied with a steadier later one: the steadier wins, whether the noisy one's median
  // came out above the steadier's or below it (it wanders from run to run by more than the gap).
  CHECK(select_best({final_of(0, {1.010, 0.99, 1.04}), final_of(1, {1.000, 0.998, 1.002})}) == 1u);
  CHECK(select_best({final_of(0, {0.995, 0.98, 1.03}), final_of(1, {1.000, 0.998, 1.002})}) == 1u);
  // The steadier earlier finalist against a noisy later one that measured faster.
  CHECK(select_best({final_of(0, {1.000, 0.999, 1.001}), final_of(1, {0.995, 0.97, 1.03})}) == 0u);
  // Example 04's finals on the H200 (ms; in one of 10 runs the noisy #2 was picked by config order): #11 now.
  CHECK(select_best({final_of(2, {0.01500, 0.01490, 0.01520}), final_of(3, {0.01540, 0.01540, 0.01550}),
                     final_of(10, {0.01550, 0.01530, 0.01560}), final_of(11, {0.01494, 0.01490, 0.01500})}) == 3u);
  CHECK(select_best({final_of(2, {0.01490, 0.01480, 0.01520}), final_of(3, {0.01540, 0.01540, 0.01550}),
                     final_of(10, {0.01550, 0.01530, 0.01560}), final_of(11, {0.01494, 0.01490, 0.01500})}) == 3u);
  // Spreads under 0.1% of the time are equally steady: a finalist whose samples rounded to one value does not
  // beat an earlier one with a 0.05% spread.
  CHECK(select_best({final_of(0, {1.0000, 0.9998, 1.0003}), final_of(1, {0.9999, 0.9999, 0.9999})}) == 0u);
  // Without interleaved finals the rule is the plain order of timings.
  CHECK(select_best({measured(0, 1.02), measured(1, 1.00)}) == 1u);
}

TEST_CASE("the tie-break judges steadiness by the finals' measured noise not by the p20-p80 spread", "[tune][measure_strategy][finals]") {
  // A finalist as the finals record it: timings and the relative standard deviation of its samples.
  auto final_of = [](int i, timings t, double rsd) {
    candidate_result r = measured(i, t[0]);
    r.time = t;
    r.interleaved = true;
    r.rsd = rsd;
    r.samples = 500;
    return r;
  };
  // Example 04's finals on the H200 at 06:34 (ms): #2 and #11 tied at 0.0150 with p20-p80 spreads within a
  // factor of two, but #2's noise 1.67% against #11's 0.21%. The spread called them equally steady and config
  // order picked #2 in one run of ten; the noise picks #11, whichever median came out lower.
  const timings two{0.0150, 0.0149, 0.0151};
  const timings eleven{0.0150, 0.0149, 0.0150};
  CHECK(select_best({final_of(2, two, 0.0167), final_of(11, eleven, 0.0021)}) == 1u);
  CHECK(select_best({final_of(2, {0.01495, 0.0149, 0.0151}, 0.0167), final_of(11, eleven, 0.0021)}) == 1u);
  CHECK(select_best({final_of(2, two, 0.0167), final_of(11, {0.01505, 0.0150, 0.0151}, 0.0021)}) == 1u);
  // Judged by p20-p80 spreads within a factor of two (a result stored before the finals recorded their noise),
  // the two are equally steady: config order, #2.
  auto stored = [&](int i, timings t) {
    auto r = final_of(i, t, 0.0);
    r.samples = 0;
    return r;
  };
  CHECK(select_best({stored(2, two), stored(11, {0.0150, 0.01488, 0.0150})}) == 0u);
  // Noise within a factor of two is equally steady: the earlier config, whichever measured faster.
  CHECK(select_best({final_of(0, {1.01, 1.00, 1.02}, 0.006), final_of(1, {1.00, 0.99, 1.01}, 0.004)}) == 0u);
  CHECK(select_best({final_of(0, {1.00, 0.99, 1.01}, 0.004), final_of(1, {1.01, 1.00, 1.02}, 0.006)}) == 0u);
  // Noise under 0.1% counts as 0.1%: a later finalist with 0.01% does not beat an earlier one with 0.15%.
  CHECK(select_best({final_of(0, {1.000, 0.999, 1.001}, 0.0015), final_of(1, {1.000, 0.999, 1.001}, 0.0001)}) == 0u);
  // Noise that is not a number is unknown: the finalist's relative spread (here 0.2%) stands in, never the floor
  // (which would make it the steadiest, 0.1% against 0.3%).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(select_best({final_of(0, {1.000, 0.999, 1.001}, 0.003), final_of(1, {1.000, 0.999, 1.001}, nan)}) == 0u);
  // A real difference in time still wins over steadiness: 1.00 vs 1.10 with spreads of 2%.
  CHECK(select_best({final_of(0, {1.10, 1.09, 1.11}, 0.001), final_of(1, {1.00, 0.99, 1.01}, 0.02)}) == 1u);
  // A finalist outside the fastest's band is not tied, however steady.
  CHECK(select_best({final_of(0, {1.00, 0.99, 1.01}, 0.02), final_of(1, {1.03, 1.025, 1.035}, 0.001)}) == 0u);
}
