// Tests for cotune/search/local_search.hpp: the best-first walk over neighbours (no device): it finds
// the optimum of a convex space, steps only from measured candidates, waits for each step's outcomes,
// never proposes a known failure, is reproducible by seed, jumps along flat axes (line moves), and orders
// a new best point's steps by the effect the same steps had beside it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <vector>

#include <cotune/search/local_search.hpp>

using namespace cotune;

namespace {

/// A 6 x 6 x 6 x 6 grid (1296 points) whose cost is convex and separable, lowest at (4, 1, 3, 2).
const std::vector<config>& grid() {
  static const std::vector<config> cs = [] {
    std::vector<config> out;
    for (int a = 0; a < 6; ++a)
      for (int b = 0; b < 6; ++b)
        for (int c = 0; c < 6; ++c)
          for (int d = 0; d < 6; ++d) out.push_back(config{{"A", a}, {"B", b}, {"C", c}, {"D", d}});
    return out;
  }();
  return cs;
}

double cost(std::size_t i) {
  const auto& c = grid()[i];
  auto sq = [](double x) { return x * x; };
  return 1 + sq(c.at("A").as_double() - 4) + 2 * sq(c.at("B").as_double() - 1) + 0.5 * sq(c.at("C").as_double() - 3) +
         sq(c.at("D").as_double() - 2);
}

std::size_t optimum() {
  std::size_t best = 0;
  for (std::size_t i = 0; i < grid().size(); ++i)
    if (cost(i) < cost(best)) best = i;
  return best;
}

} // namespace

TEST_CASE("local search finds the optimum of a convex space in a few dozen evaluations", "[search][local]") {
  const search_space space(grid());
  const std::size_t target = optimum();
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    INFO("seed " << seed);
    const auto h = run_search(local_search{}, space, {.evaluations = 300, .seed = seed},
                              [](std::size_t i) { return search_outcome{i, cost(i), true}; }, 8, 2);
    const auto at = std::find_if(h.begin(), h.end(), [&](const search_outcome& o) { return o.index == target; });
    REQUIRE(at != h.end());
    // Random sampling needs 648 on average; a walk from any corner is at most 15 steps away.
    CHECK(at - h.begin() < 60);
  }
}

TEST_CASE("local search starts with a few random candidates, then steps from the best one and waits for it",
          "[search][local]") {
  const search_space space(grid());
  auto s = local_search(4, 3).start(space, {.evaluations = 100, .seed = 3}, 2);
  const auto starts = s->propose(16);
  REQUIRE(starts.size() == 4);          // the starts, not the 16 asked for
  CHECK(s->propose(16).empty());        // nothing to step from before their outcomes
  for (auto i : starts) s->tell({i, cost(i), true});
  const auto best = *std::min_element(starts.begin(), starts.end(), [](auto a, auto b) { return cost(a) < cost(b); });
  const auto step = s->propose(16);
  REQUIRE(step.size() == 3);
  const auto near = space.neighbours(best);
  for (auto j : step) CHECK(std::find(near.begin(), near.end(), j) != near.end());
  CHECK(s->propose(16).empty());        // waits for this step's outcomes too
  for (auto j : step) s->tell({j, cost(j), true});
  CHECK_FALSE(s->propose(16).empty());
}

TEST_CASE("local search never proposes a known failure or a candidate twice, and keeps to its budget",
          "[search][local]") {
  const search_space space(grid());
  std::set<std::size_t> failed;
  for (std::size_t i = 0; i < grid().size(); i += 7) failed.insert(i); // a seventh fail (known from a journal)
  for (std::uint64_t seed : {1u, 2u}) {
    auto s = local_search{}.start(space, {.evaluations = 250, .seed = seed}, 2);
    for (auto i : failed) s->known({i, std::numeric_limits<double>::infinity(), false});
    std::set<std::size_t> seen;
    std::size_t proposed = 0;
    for (;;) {
      const auto b = s->propose(8);
      if (b.empty()) break;
      for (auto i : b) {
        CHECK(failed.count(i) == 0);
        CHECK(seen.insert(i).second);
        s->tell({i, cost(i), true});
      }
      proposed += b.size();
    }
    CHECK(proposed + failed.size() == 250);
  }
}

TEST_CASE("local search is reproducible by seed, whatever order outcomes arrive in", "[search][local]") {
  const search_space space(grid());
  auto run = [&](std::uint64_t seed, bool reversed) {
    auto s = local_search{}.start(space, {.evaluations = 120, .seed = seed}, 2);
    std::vector<std::size_t> order;
    std::vector<std::vector<std::size_t>> flight;
    for (;;) {
      while (flight.size() < 2) {
        auto b = s->propose(6);
        if (b.empty()) break;
        flight.push_back(std::move(b));
      }
      if (flight.empty()) break;
      auto b = flight.front();
      flight.erase(flight.begin());
      order.insert(order.end(), b.begin(), b.end());
      if (reversed) std::reverse(b.begin(), b.end());
      for (auto i : b) s->tell({i, cost(i), true});
    }
    return order;
  };
  CHECK(run(5, false) == run(5, true));
  CHECK(run(5, false) != run(6, false));
}

TEST_CASE("pipelined local search proposes a second batch while one is in flight", "[search][local]") {
  const search_space space(grid());
  auto waiting = local_search(4, 3).start(space, {.evaluations = 100, .seed = 3}, 2);
  auto pipelined = local_search(4, 3, true).start(space, {.evaluations = 100, .seed = 3}, 2);
  for (auto* s : {waiting.get(), pipelined.get()}) {
    const auto starts = s->propose(8);
    for (auto i : starts) s->tell({i, cost(i), true});
    REQUIRE(s->propose(8).size() == 3); // the first step
  }
  CHECK(waiting->propose(8).empty());
  const auto more = pipelined->propose(8);
  CHECK_FALSE(more.empty());
  CHECK(more.size() <= 3);
  // Still reproducible, and a whole search keeps to its budget.
  auto a = run_search(local_search(4, 3, true), space, {.evaluations = 90, .seed = 4},
                      [](std::size_t i) { return search_outcome{i, cost(i), true}; }, 8, 2);
  auto b = run_search(local_search(4, 3, true), space, {.evaluations = 90, .seed = 4},
                      [](std::size_t i) { return search_outcome{i, cost(i), true}; }, 8, 2);
  CHECK(a.size() == 90);
  for (std::size_t k = 0; k < a.size(); ++k) CHECK(a[k].index == b[k].index);
}

namespace {

/// A line of 10 positions (A) times 2 (B), every candidate as fast as the others: a plateau.
const std::vector<config>& plateau() {
  static const std::vector<config> cs = [] {
    std::vector<config> out;
    for (int a = 0; a < 10; ++a)
      for (int b = 0; b < 2; ++b) out.push_back(config{{"A", a}, {"B", b}});
    return out;
  }();
  return cs;
}

/// Runs a search with one start to the batch after the start's neighbourhood: the start, and what it
/// proposes once the start and its one-step neighbours are measured (all equally fast).
std::pair<std::size_t, std::vector<std::size_t>> after_flat_neighbourhood(const local_search& strategy,
                                                                          std::uint64_t seed) {
  const search_space space(plateau());
  auto s = strategy.start(space, {.evaluations = 20, .seed = seed}, 2);
  const auto start = s->propose(8);
  REQUIRE(start.size() == 1);
  s->tell({start[0], 1.0, true});
  const auto step = s->propose(8);
  REQUIRE(step.size() == space.neighbours(start[0]).size());
  for (auto j : step) s->tell({j, 1.0, true});
  return {start[0], s->propose(8)};
}

} // namespace

TEST_CASE("on a flat axis local search jumps along the line, the middle of the widest untried stretch first",
          "[search][local]") {
  const search_space space(plateau());
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    INFO("seed " << seed);
    const auto [start, next] = after_flat_neighbourhood(local_search(1, 3), seed);
    REQUIRE(next.size() == 3);
    const int a = space.coords(start)[0], b = space.coords(start)[1];
    // How far position q is from anything taken on the line (a - 1 to a + 1) or from just past an end.
    const auto gap = [&](int q) { return std::min({q + 1, 10 - q, std::abs(q - a) - 1}); };
    int widest = 0;
    for (int q = 0; q < 10; ++q)
      if (std::abs(q - a) >= 2) widest = std::max(widest, gap(q));
    int last = widest;
    for (auto j : next) {
      // On the start's line (same B), at least two positions away, in non-increasing gap.
      CHECK(space.coords(j)[1] == b);
      const int q = space.coords(j)[0];
      CHECK(std::abs(q - a) >= 2);
      CHECK(gap(q) <= last);
      last = gap(q);
    }
    CHECK(gap(space.coords(next[0])[0]) == widest);
  }
}

TEST_CASE("without line moves (flat < 0) local search only steps to neighbours of measured candidates",
          "[search][local]") {
  const search_space space(plateau());
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    INFO("seed " << seed);
    const auto [start, next] = after_flat_neighbourhood(local_search(1, 3, false, -1), seed);
    REQUIRE_FALSE(next.empty());
    const int a = space.coords(start)[0];
    for (auto j : next) CHECK(std::abs(space.coords(j)[0] - a) <= 2); // a neighbour's neighbour at most
  }
}

TEST_CASE("an axis with a slower or failed neighbour is not flat: no line moves along it", "[search][local]") {
  const search_space space(plateau());
  auto s = local_search(1, 3).start(space, {.evaluations = 20, .seed = 2}, 2);
  const auto start = s->propose(8);
  REQUIRE(start.size() == 1);
  s->tell({start[0], 1.0, true});
  const auto step = s->propose(8);
  const int a = space.coords(start[0])[0];
  for (auto j : step) {
    // The A neighbours: one 5% slower (more than the 2% that counts as flat) or failed.
    const bool on_a = space.coords(j)[0] != a;
    s->tell({j, on_a ? 1.05 : 1.0, !(on_a && space.coords(j)[0] < a)});
  }
  for (auto j : s->propose(8)) CHECK(std::abs(space.coords(j)[0] - a) <= 2);
}

namespace {

/// A 6 x 6 grid (A, B), for steps whose effect is measured beside the point they are taken from.
const std::vector<config>& square() {
  static const std::vector<config> cs = [] {
    std::vector<config> out;
    for (int a = 0; a < 6; ++a)
      for (int b = 0; b < 6; ++b) out.push_back(config{{"A", a}, {"B", b}});
    return out;
  }();
  return cs;
}

} // namespace

TEST_CASE("local search first tries, from a new best point, the step that helped beside it", "[search][local]") {
  // From start S = (a, b): S 1.0; its neighbours (a+1, b) 0.5 (the new best, P), (a-1, b) 1.0, (a, b+1)
  // 0.9 (B up helped beside P) and (a, b-1) 1.1 (B down hurt). Both A up and B up won once, so their
  // direction counts tie. Measured beside P (at S), B up is faster: P's first proposal is (a+1, b+1),
  // and B down, which hurt there, comes after A up, whose effect is unknown. Where a == 1 and b >= 3,
  // the axes' order alone (A's longer side is up, B's is down) would pick A up (a+2, b) first: those
  // starts are the ones that tell the measured effect from the order, and some must be among the seeds.
  const search_space space(square());
  int checked = 0, telling = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto s = local_search(1, 4).start(space, {.evaluations = 30, .seed = seed}, 2);
    const auto start = s->propose(8);
    REQUIRE(start.size() == 1);
    const auto c = space.coords(start[0]);
    const int a = c[0], b = c[1];
    if (a < 1 || a > 3 || b < 1 || b > 4) continue; // every neighbour used below must exist
    INFO("seed " << seed << ", start (" << a << ", " << b << ")");
    ++checked;
    if (a == 1 && b >= 3) ++telling;
    s->tell({start[0], 1.0, true});
    const auto step = s->propose(8);
    REQUIRE(step.size() == 4);
    const auto at = [&](int x, int y) { return *space.find({x, y}); };
    for (auto j : step) {
      const auto q = space.coords(j);
      const double t = q[0] == a + 1 ? 0.5 : q[0] == a - 1 ? 1.0 : q[1] == b + 1 ? 0.9 : 1.1;
      s->tell({j, t, true});
    }
    const auto next = s->propose(8);
    REQUIRE(next.size() >= 3);
    CHECK(next[0] == at(a + 1, b + 1));
    CHECK(next[1] == at(a + 2, b));
    CHECK(next[2] == at(a + 1, b - 1));
  }
  CHECK(checked >= 5);
  CHECK(telling >= 1);
}
