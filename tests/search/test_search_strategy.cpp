// Tests for cotune/search/: every strategy on a synthetic cost with seeded noise (no device):
// reaching the optimum within a budget, reproducibility, budgets, and failed candidates.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <cotune/detail/mersenne_twister.hpp>
#include <cotune/search/search.hpp>

#include "synthetic_space.hpp"

using namespace cotune;
using cotune_test::synthetic_configs;
using cotune_test::synthetic_cost;
using cotune_test::synthetic_evaluator;

namespace {

const std::vector<config>& configs() {
  static const std::vector<config> cs = synthetic_configs();
  return cs;
}

double optimum() {
  double best = INFINITY;
  for (const auto& c : configs()) best = std::min(best, synthetic_cost(c));
  return best;
}

/// The true (noise-free) cost of the best candidate a search measured.
double best_found(const std::vector<search_outcome>& history) {
  std::size_t best = 0;
  double best_ms = INFINITY;
  for (const auto& o : history)
    if (o.valid() && o.time_ms < best_ms) {
      best_ms = o.time_ms;
      best = o.index;
    }
  return synthetic_cost(configs()[best]);
}

std::vector<search_outcome> search(const search_strategy& s, search_settings st, std::size_t batch = 4,
                                   std::size_t depth = 1) {
  const search_space space(configs());
  return run_search(s, space, st, synthetic_evaluator{&configs(), std::mt19937_64(st.seed + 99)}, batch, depth);
}

std::vector<std::size_t> indices(const std::vector<search_outcome>& h) {
  std::vector<std::size_t> out;
  for (const auto& o : h) out.push_back(o.index);
  return out;
}

} // namespace

TEST_CASE("the strategies' engine gives std::mt19937_64's sequence for every seed", "[search]") {
  // The standard fixes the 10000th output of a default-constructed std::mt19937_64.
  detail::mt19937_64 d;
  for (int i = 1; i < 10000; ++i) d();
  CHECK(d() == 9981545732273789042u);
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5489}, std::uint64_t{99},
                             std::uint64_t{0x8000000000000007}, ~std::uint64_t{0}}) {
    detail::mt19937_64 ours(seed);
    std::mt19937_64 theirs(seed);
    int differ = 0;
    for (int i = 0; i < 2000; ++i) differ += ours() != theirs(); // past several twists of the 312-word state
    CHECK(differ == 0);
  }
  static_assert(detail::mt19937_64::min() == std::mt19937_64::min() &&
                detail::mt19937_64::max() == std::mt19937_64::max());
}

TEST_CASE("the search space recovers axes, positions and neighbours from the configs", "[search][search_space]") {
  const search_space space(configs());
  REQUIRE(space.size() == configs().size());
  REQUIRE(space.dimensions() == 5);
  CHECK(space.axes()[0].name == "BLOCK");
  CHECK(space.axes()[0].values.size() == 5);
  CHECK(space.axes()[0].values.front() == value(16));
  // BLOCK 256 exists only with VEC 1 and 2 (the constraint BLOCK * VEC <= 1024 leaves a hole):
  // stepping up BLOCK from (128, VEC 4) finds nothing; stepping from (128, VEC 2) finds 256.
  const auto at = [&](int block, int vec) {
    return *space.find(space.coords(static_cast<std::size_t>(
        std::find(configs().begin(), configs().end(),
                  config{{"BLOCK", block}, {"WARPS", 4}, {"STAGES", 2}, {"SPLIT", 1}, {"VEC", vec}}) -
        configs().begin())));
  };
  const auto has_block = [&](std::size_t i, int block) {
    const auto n = space.neighbours(i);
    return std::any_of(n.begin(), n.end(), [&](std::size_t j) { return configs()[j].at("BLOCK") == value(block); });
  };
  CHECK(has_block(at(128, 2), 256));
  CHECK_FALSE(has_block(at(128, 4), 256));
  CHECK(has_block(at(128, 4), 64));
  for (std::size_t j : space.neighbours(at(128, 2))) CHECK(space.distance(space.coords(j), space.coords(at(128, 2))) > 0);

  // A walk along BLOCK (axis 0) visits the positions the list holds, nearest first, until told to stop.
  const auto blocks = [&](std::size_t from, int dir, std::size_t stop_after) {
    std::vector<value> seen;
    space.walk(from, 0, dir, [&](std::size_t j) {
      seen.push_back(configs()[j].at("BLOCK"));
      return seen.size() < stop_after;
    });
    return seen;
  };
  CHECK(blocks(at(16, 2), 1, 99) == std::vector<value>{value(32), value(64), value(128), value(256)});
  CHECK(blocks(at(16, 4), 1, 99) == std::vector<value>{value(32), value(64), value(128)}); // no BLOCK 256 at VEC 4
  CHECK(blocks(at(128, 2), -1, 99) == std::vector<value>{value(64), value(32), value(16)});
  CHECK(blocks(at(16, 2), 1, 2) == std::vector<value>{value(32), value(64)});
  CHECK(blocks(at(16, 2), -1, 99).empty());
}

TEST_CASE("exhaustive search proposes every candidate in config order and finds the optimum", "[search]") {
  const auto h = search(exhaustive_search{}, {});
  REQUIRE(h.size() == configs().size());
  for (std::size_t i = 0; i < h.size(); ++i) CHECK(h[i].index == i);
  CHECK(best_found(h) == Approx(optimum()).epsilon(0.02));
  // With a budget: the first ones.
  const auto first = search(exhaustive_search{}, {.evaluations = 10});
  CHECK(indices(first) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("each strategy gets within 3% of the optimum in a seventh of the space", "[search]") {
  const std::vector<std::shared_ptr<const search_strategy>> strategies{
      std::make_shared<local_search>(), std::make_shared<evolutionary_search>(), std::make_shared<bayesian_search>()};
  const double best = optimum();
  for (const auto& s : strategies)
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      INFO(s->name() << " seed " << seed);
      const auto h = search(*s, {.evaluations = 150, .seed = seed});
      CHECK(h.size() == 150);
      CHECK(best_found(h) <= best * 1.03);
    }
}

TEST_CASE("the same seed proposes the same candidates; another seed others", "[search]") {
  for (const auto& name : {"random", "local", "evolution", "bayes"}) {
    INFO(name);
    const auto s = search_named(name);
    REQUIRE(s);
    const auto a = search(*s, {.evaluations = 60, .seed = 5}), b = search(*s, {.evaluations = 60, .seed = 5});
    const auto c = search(*s, {.evaluations = 60, .seed = 6});
    CHECK(indices(a) == indices(b));
    CHECK(indices(a) != indices(c));
    // Two batches in flight: still reproducible (outcomes reach the strategy in proposal order).
    const auto d = search(*s, {.evaluations = 60, .seed = 5}, 3, 2), e = search(*s, {.evaluations = 60, .seed = 5}, 3, 2);
    CHECK(indices(d) == indices(e));
  }
}

TEST_CASE("budgets are respected and no candidate is proposed twice, failed or not", "[search]") {
  std::size_t failures = 0;
  for (const auto& name : {"exhaustive", "random", "local", "evolution", "bayes"}) {
    INFO(name);
    const auto s = search_named(name);
    for (std::size_t budget : {1u, 7u, 100u}) {
      const auto h = search(*s, {.evaluations = budget, .seed = 11}, 4, 2);
      CHECK(h.size() == budget);
      const auto idx = indices(h);
      const std::set<std::size_t> distinct(idx.begin(), idx.end());
      CHECK(distinct.size() == h.size());
      for (const auto& o : h) failures += o.valid() ? 0 : 1;
    }
    // No budget: the strategy's default (a quarter of the candidates, at least 32).
    CHECK(search(*s, {.seed = 1}).size() == (std::string(name) == "exhaustive" ? configs().size() : configs().size() / 4));
  }
  CHECK(failures > 0); // the space's out-of-resources corner was met, and not proposed again
}

TEST_CASE("failed candidates teach the model: bayes proposes fewer of them than random", "[search]") {
  auto failed = [](const std::vector<search_outcome>& h) {
    return std::count_if(h.begin(), h.end(), [](const search_outcome& o) { return !o.valid(); });
  };
  long random_failed = 0, bayes_failed = 0;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    random_failed += failed(search(random_search{}, {.evaluations = 200, .seed = seed}));
    bayes_failed += failed(search(bayesian_search{}, {.evaluations = 200, .seed = seed}));
  }
  CHECK(bayes_failed < random_failed);
}

TEST_CASE("a wall-clock budget stops proposals", "[search]") {
  const search_space space(configs());
  auto session = random_search{}.start(space, {.wall_ms = 1});
  auto first = session->propose(4);
  CHECK(first.size() == 4);
  for (auto i : first) session->tell({i, 1.0, true});
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(5)) {
  }
  CHECK(session->propose(4).empty());
}

namespace {
/// A careless user strategy: repeats, out-of-range indices, more than asked.
class careless_search final : public search_strategy {
protected:
  class session final : public search_session {
  public:
    using search_session::search_session;

  protected:
    std::vector<std::size_t> do_propose(std::size_t) override { return {3, 3, 99999, 1, 2, 5, 8, 9}; }
  };
  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st, std::size_t d) const override {
    return std::make_unique<session>(sp, st, sp.size(), d);
  }
  std::string do_name() const override { return "careless"; }
};
} // namespace

TEST_CASE("a session drops repeats, unknown indices and extras, whatever a strategy says", "[search]") {
  const search_space space(configs());
  auto s = careless_search{}.start(space, {});
  s->known({1, std::numeric_limits<double>::infinity(), false}); // a resumed failure: never proposed
  CHECK(s->propose(3) == std::vector<std::size_t>{3, 2, 5});
  CHECK(s->propose(10) == std::vector<std::size_t>{8, 9});
  CHECK(s->propose(10).empty());
  CHECK(s->spent() == 6);
}

TEST_CASE("launch options are axes of the search space: configs differing only in warps are neighbours",
          "[search][space]") {
  std::vector<cotune::config> cs;
  for (int block : {64, 128})
    for (int warps : {2, 4, 8})
      cs.push_back(cotune::config{{{"BLOCK", block}}, cotune::launch_options{.num_warps = warps, .num_stages = 3}});
  const cotune::search_space space(cs);
  // BLOCK and launch.num_warps; num_stages and num_ctas are the same everywhere, so no axes.
  REQUIRE(space.dimensions() == 2);
  CHECK(space.axes()[0].name == "BLOCK");
  CHECK(space.axes()[1].name == "launch.num_warps");
  // Six distinct points, none collapsed onto another.
  std::set<std::vector<int>> points;
  for (std::size_t i = 0; i < cs.size(); ++i) points.insert(space.coords(i));
  CHECK(points.size() == 6);
  // {BLOCK 64, 4 warps}: one step on warps (2, 8) and one on BLOCK (128, same warps).
  auto n = space.neighbours(1);
  std::sort(n.begin(), n.end());
  CHECK(n == std::vector<std::size_t>{0, 2, 4});
}

TEST_CASE("a parameter and the launch option it sets are one axis: a step moves both", "[search][space]") {
  std::vector<cotune::config> cs;
  for (int block : {64, 128})
    for (int warps : {2, 4, 8})
      cs.push_back(cotune::config{{{"BLOCK", block}, {"WARPS", warps}}, cotune::launch_options{.num_warps = warps, .num_stages = 3}});
  const cotune::search_space space(cs);
  // WARPS and launch.num_warps determine each other: one axis, the parameter's, naming the other.
  REQUIRE(space.dimensions() == 2);
  CHECK(space.axes()[0].name == "BLOCK");
  CHECK(space.axes()[1].name == "WARPS");
  CHECK(space.axes()[1].tied == std::vector<std::string>{"launch.num_warps"});
  std::set<std::vector<int>> points;
  for (std::size_t i = 0; i < cs.size(); ++i) points.insert(space.coords(i));
  CHECK(points.size() == 6);
  // {BLOCK 64, WARPS 4}: steps to WARPS 2 and 8 (as separate axes, no config had WARPS 2 with 4 warps).
  auto n = space.neighbours(1);
  std::sort(n.begin(), n.end());
  CHECK(n == std::vector<std::size_t>{0, 2, 4});
  // Two parameters that only sometimes agree stay two axes.
  cs.push_back(cotune::config{{{"BLOCK", 64}, {"WARPS", 2}}, cotune::launch_options{.num_warps = 4, .num_stages = 3}});
  CHECK(cotune::search_space(cs).dimensions() == 3);
}
