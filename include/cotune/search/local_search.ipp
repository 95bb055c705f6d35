#pragma once
/// \file The bodies of search/local_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cotune/search/local_search.hpp>

namespace cotune {

class local_search::session final : public search_session {
public:
  session(const search_space& sp, const search_settings& st, std::size_t depth, const local_search& o)
      : search_session(sp, st, default_search_evaluations(sp.size()), depth), starts_(o.starts_), step_(o.step_),
        pipelined_(o.pipelined_), flat_(o.flat_), wins_(2 * sp.dimensions(), 0), tries_(2 * sp.dimensions(), 0) {}

protected:
  std::vector<std::size_t> do_propose(std::size_t want) override {
    const std::size_t seen = history().size() + in_flight();
    if (seen < starts_) return draw(std::min(want, starts_ - seen));
    if (in_flight() > 0 && !pipelined_) return {}; // each step learns from the one before
    std::vector<search_outcome> valid;
    for (const auto& h : history())
      if (h.valid()) valid.push_back(h);
    std::stable_sort(valid.begin(), valid.end(), [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
    const std::size_t n = std::min(step_, want);
    std::vector<pick> picks;
    bool lines_given = flat_ < 0;
    for (std::size_t r = 0; r < valid.size() && picks.size() < n; ++r) {
      const std::size_t a = valid[r].index;
      for (std::size_t j : neighbours_in_turn(a))
        if (!taken(j)) offer(picks, {{r, 0, predicted(a, j), -promise(a, j)}, j, a});
      if (lines_given) continue;
      if (const auto axes = flat_axes(a); !axes.empty()) {
        lines_given = true;
        const auto far = line_moves(a, axes);
        for (std::size_t k = 0; k < far.size(); ++k)
          offer(picks, {{r, 1, predicted(a, far[k]), static_cast<double>(k)}, far[k], a});
      }
    }
    if (picks.empty()) return draw(std::min(want, starts_)); // every neighbourhood used up: start afresh
    std::stable_sort(picks.begin(), picks.end(), [](const pick& x, const pick& y) { return x.rank < y.rank; });
    picks.resize(std::min(picks.size(), n));
    std::vector<std::size_t> out;
    for (const auto& p : picks) {
      from_[p.index] = p.from;
      out.push_back(p.index);
    }
    return out;
  }

  void do_tell(const search_outcome& o) override {
    if (o.valid()) time_[o.index] = o.time_ms;
    auto it = from_.find(o.index);
    if (it == from_.end()) return;
    const std::size_t m = move(it->second, o.index); // a line move counts for its axis and direction too
    ++tries_[m];
    if (o.valid() && o.time_ms < time_.at(it->second)) ++wins_[m];
  }

private:
  /// A proposal: ranked by the fastness order of the point it steps from, then one-step moves before
  /// line moves, then the step's effect seen nearby (`predicted`, faster first), then promise
  /// (one-step) or the order of `line_moves`.
  struct pick {
    std::tuple<std::size_t, int, double, double> rank;
    std::size_t index, from;
  };
  /// Adds `p`, or re-ranks an earlier pick of the same candidate if `p` ranks before it.
  static void offer(std::vector<pick>& picks, const pick& p) {
    auto it = std::find_if(picks.begin(), picks.end(), [&](const pick& q) { return q.index == p.index; });
    if (it == picks.end()) picks.push_back(p);
    else if (p.rank < it->rank) *it = p;
  }

  std::vector<std::size_t> draw(std::size_t n) {
    std::vector<std::size_t> out;
    while (out.size() < n)
      if (auto r = random_untaken(); r && std::find(out.begin(), out.end(), *r) == out.end()) out.push_back(*r);
      else break;
    return out;
  }
  /// The (axis, direction) slot of the step from `a` to `b`, which differ on one axis (a categorical
  /// axis has no direction: one slot).
  [[nodiscard]] std::size_t move(std::size_t a, std::size_t b) const {
    const auto &p = space().coords(a), &q = space().coords(b);
    for (std::size_t d = 0; d < p.size(); ++d)
      if (p[d] != q[d]) return 2 * d + (q[d] > p[d] && !space().axes()[d].categorical() ? 1 : 0);
    return 0;
  }
  /// How often that move helped, smoothed (Laplace): 1/2 before any try.
  [[nodiscard]] double promise(std::size_t a, std::size_t b) const {
    const std::size_t m = move(a, b);
    return (static_cast<double>(wins_[m]) + 1) / (static_cast<double>(tries_[m]) + 2);
  }
  /// The step from `a` to `b` (which differ on one axis `d`) as measured beside `a`: along each other
  /// axis, on each side, the nearest measured candidate `c` whose partner (`c` with `d` as in `b`) is
  /// measured too, both valid; the mean of log(partner / `c`) over those pairs, 0 (no change) if none.
  /// Nearby points mostly share the effect of a step, so a step that helped (or hurt) beside `a` is
  /// tried early (late) from `a`; a new best point's neighbours thus learn from the old one's.
  [[nodiscard]] double predicted(std::size_t a, std::size_t b) const {
    const std::size_t d = move(a, b) / 2;
    const int v = space().coords(b)[d];
    double sum = 0;
    int pairs = 0;
    // Whether `c` and its partner (`c` with `d` as in `b`) are both measured: then their ratio counts.
    const auto pair = [&](std::size_t c) {
      const auto tc = time_.find(c);
      if (tc == time_.end()) return false;
      auto q = space().coords(c);
      q[d] = v;
      const auto partner = space().find(q);
      const auto tp = partner ? time_.find(*partner) : time_.end();
      // A time of 0 (a benchmarker's floor) has no ratio: such a pair says nothing.
      if (tp == time_.end() || !(tc->second > 0) || !(tp->second > 0)) return false;
      sum += std::log(tp->second / tc->second);
      ++pairs;
      return true;
    };
    for (std::size_t e = 0; e < space().dimensions(); ++e) {
      if (e == d) continue;
      if (space().axes()[e].categorical()) { // no nearest value: the first pair in candidate order
        for (std::size_t c : space().along(a, e))
          if (pair(c)) break;
        continue;
      }
      for (int dir : {-1, 1})
        space().walk(a, e, dir, [&](std::size_t c) { return !pair(c); }); // the nearest pair only
    }
    return pairs == 0 ? 0.0 : sum / pairs;
  }
  /// `a`'s one-step neighbours taking the axes in turn, starting after the axis of the step that
  /// reached `a` (from the first axis for a random start): first each axis's step towards its longer
  /// side (the lower side on a tie), then each axis's other step. Among steps ranked alike, this order
  /// decides: each batch spreads over the axes, and no axis always comes last.
  [[nodiscard]] std::vector<std::size_t> neighbours_in_turn(std::size_t a) const {
    const std::size_t dims = space().dimensions();
    const auto from = from_.find(a);
    const std::size_t first = from == from_.end() ? 0 : (move(from->second, a) / 2 + 1) % dims;
    std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> turns; // (side, turn, candidate)
    for (std::size_t d = 0; d < dims; ++d) {
      if (space().axes()[d].categorical()) { // every other value is one step away: all of them, first side
        for (std::size_t j : space().along(a, d)) turns.emplace_back(0, (d + dims - first) % dims, j);
        continue;
      }
      std::vector<std::size_t> sides; // lower side first
      for (int dir : {-1, 1})
        space().walk(a, d, dir, [&](std::size_t j) {
          sides.push_back(j);
          return false;
        });
      const int p = space().coords(a)[d], top = static_cast<int>(space().axes()[d].values.size()) - 1;
      if (sides.size() == 2 && top - p > p) std::swap(sides[0], sides[1]);
      for (std::size_t s = 0; s < sides.size(); ++s) turns.emplace_back(s, (d + dims - first) % dims, sides[s]);
    }
    std::sort(turns.begin(), turns.end());
    std::vector<std::size_t> out;
    for (const auto& t : turns) out.push_back(std::get<2>(t));
    return out;
  }
  /// The axes along which every one-step neighbour of measured point `a` is measured, valid and at
  /// most `flat` slower than `a`.
  [[nodiscard]] std::vector<std::size_t> flat_axes(std::size_t a) const {
    const double limit = time_.at(a) * (1 + flat_);
    // The one-step neighbour of `a` on axis `d` in direction `dir`, if any, is measured, valid and not slower.
    const auto flat_side = [&](std::size_t d, int dir, bool& seen) {
      bool flat = true;
      space().walk(a, d, dir, [&](std::size_t j) {
        seen = true;
        const auto t = time_.find(j);
        flat = t != time_.end() && t->second <= limit; // unmeasured, failed or slower: not flat
        return false;                                  // the nearest only
      });
      return flat;
    };
    std::vector<std::size_t> out;
    for (std::size_t d = 0; d < space().dimensions(); ++d) {
      if (space().axes()[d].categorical()) continue; // its every value is a one-step move already
      bool seen = false;
      if (flat_side(d, -1, seen) && flat_side(d, 1, seen) && seen) out.push_back(d);
    }
    return out;
  }
  /// The untaken candidates at least two present positions from `a` along `axes` (everything else
  /// as `a`): first those furthest from anything taken on their line (the line's ends, as the list holds
  /// it, count as taken positions just beyond them, so the middle of an untried stretch comes before its
  /// end: an end value is the likeliest extreme), then the furthest from `a`; ties in axis order, the
  /// lower side first. One pass along each line.
  [[nodiscard]] std::vector<std::size_t> line_moves(std::size_t a, const std::vector<std::size_t>& axes) const {
    std::vector<std::tuple<int, std::size_t, std::size_t>> found; // (gap, steps away, candidate), in walk order
    for (std::size_t d : axes) {
      std::vector<std::size_t> line; // the line through `a` as the list holds it, lowest position first
      const auto collect = [&](std::size_t j) {
        line.push_back(j);
        return true;
      };
      space().walk(a, d, -1, collect);
      std::reverse(line.begin(), line.end());
      const std::size_t at = line.size(); // `a`'s place on the line
      line.push_back(a);
      space().walk(a, d, 1, collect);
      const auto pos = [&](std::size_t k) { return space().coords(line[k])[d]; };
      // The nearest taken position below and above each place.
      std::vector<int> below(line.size()), above(line.size());
      int last = pos(0) - 1;
      for (std::size_t k = 0; k < line.size(); ++k) {
        below[k] = last;
        if (taken(line[k])) last = pos(k);
      }
      last = pos(line.size() - 1) + 1;
      for (std::size_t k = line.size(); k-- > 0;) {
        above[k] = last;
        if (taken(line[k])) last = pos(k);
      }
      const auto offer_line_move = [&](std::size_t k, std::size_t steps) {
        if (!taken(line[k])) found.emplace_back(std::min(pos(k) - below[k], above[k] - pos(k)), steps, line[k]);
      };
      for (std::size_t steps = 2; steps <= at; ++steps) offer_line_move(at - steps, steps);
      for (std::size_t steps = 2; at + steps < line.size(); ++steps) offer_line_move(at + steps, steps);
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
      return std::tie(std::get<0>(x), std::get<1>(x)) > std::tie(std::get<0>(y), std::get<1>(y));
    });
    std::vector<std::size_t> out;
    for (const auto& f : found) out.push_back(std::get<2>(f));
    return out;
  }

  std::size_t starts_, step_;
  bool pipelined_;
  double flat_;
  std::vector<std::size_t> wins_, tries_;
  std::map<std::size_t, std::size_t> from_; ///< proposed candidate -> the candidate it steps from
  std::map<std::size_t, double> time_;      ///< valid delivered outcomes
};

COTUNE_DECL std::unique_ptr<search_session>
local_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, *this);
}

} // namespace cotune
