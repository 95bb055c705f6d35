#pragma once
/// \file The bodies of search/bayes_local_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cotune/search/bayes_local_search.hpp>

namespace cotune {

class bayes_local_search::session final : public search_session {
public:
  session(const search_space& sp, const search_settings& st, std::size_t depth, const bayes_local_search& o)
      : search_session(sp, st, default_search_evaluations(sp.size()), depth), step_(o.step_), pipelined_(o.pipelined_),
        gamma_(o.gamma_), explore_(o.explore_), local_share_(o.local_share_) {
    startup_ = std::max<std::size_t>({2, o.startup_, limit() / 10});
    near_.resize(sp.size());
    near_done_.assign(sp.size(), 0);
    exhausted_.assign(sp.size(), 0);
    started_.assign(sp.size(), 0);
    time_.assign(sp.size(), INFINITY);
  }

protected:
  std::vector<std::size_t> do_propose(std::size_t want) override {
    std::vector<std::size_t> out;
    auto fresh = [&](std::size_t i) { return !taken(i) && std::find(out.begin(), out.end(), i) == out.end(); };
    auto random = [&] {
      while (out.size() < want)
        if (auto r = random_untaken(); r && fresh(*r)) out.push_back(*r);
        else break;
    };
    std::vector<search_outcome> valid;
    for (const auto& h : history())
      if (h.valid()) valid.push_back(h);
    if (history().size() + in_flight() < startup_ || valid.empty()) {
      want = std::min(want, std::max<std::size_t>(1, startup_ - std::min(startup_, history().size() + in_flight())));
      random();
      return out;
    }
    if (in_flight() > 0 && !pipelined_) return out; // each batch learns from the one before
    want = std::min(want, step_);
    std::stable_sort(valid.begin(), valid.end(), [](auto& a, auto& b) { return a.time_ms < b.time_ms; });
    detail::parzen_model model(space(), history(), gamma_);
    for (; seen_ < history().size(); ++seen_) {
      const auto& h = history()[seen_];
      time_[h.index] = h.valid() ? h.time_ms : INFINITY;
    }
    // A plateau: so many measured candidates within 2% (the suite's "near-optimal") of one that
    // descending from each in turn would mostly measure more of it. When the best is on one, the
    // ranked list's descent (beside the runner-ups) gives its picks to descents from other basins; when
    // the next candidate to descend from (the fastest whose neighbours are not all taken) is on one,
    // the model's global picks do, as its good share is the plateau by then. The ranked list keeps
    // its picks on a plateau below the best: that is how convolution-a100's optimum, one config beside
    // candidates 38-41% slower, is found.
    auto plateau_at = [&](std::size_t from) {
      std::size_t close = from;
      while (close < valid.size() && valid[close].time_ms <= valid[from].time_ms * 1.02) ++close;
      return close - from >= plateau_size;
    };
    std::size_t next = 0; // the next candidate to descend from
    while (next + 1 < valid.size() && exhausted_[valid[next].index]) ++next;
    const bool flat_top = plateau_at(0), flat_next = plateau_at(next);
    const double plateau_ms = valid[next].time_ms * 1.02; // a new basin's descent starts slower than this
    // Per categorical axis, the runner-up: the fastest candidate with another value than the best's.
    std::vector<std::size_t> parents;
    for (std::size_t d = 0; d < space().dimensions(); ++d) {
      if (!space().axes()[d].categorical()) continue;
      const int best_value = space().coords(valid.front().index)[d];
      for (const auto& v : valid)
        if (space().coords(v.index)[d] != best_value) {
          if (std::find(parents.begin(), parents.end(), v.index) == parents.end()) parents.push_back(v.index);
          break;
        }
    }
    while (out.size() < want) {
      std::optional<std::size_t> pick;
      if (detail::unit(rng()) < explore_) {
        if (auto r = random_untaken(); r && fresh(*r)) pick = r;
      } else if (detail::unit(rng()) < local_share_) {
        // Every other local pick refines a runner-up in turn (the best of the second-best method of a
        // selector), so that the best method's region found first cannot hide a faster one's.
        if (!parents.empty() && (local_picks_++ & 1)) {
          for (std::size_t k = 0; k < parents.size() && !pick; ++k)
            pick = best_neighbour(model, parents[(turn_++) % parents.size()], fresh);
        }
        if (!pick) pick = best_neighbour(model, valid.front().index, fresh);
        if (!pick && flat_top) pick = basin_pick(model, valid, plateau_ms, fresh);
        for (std::size_t r = 1; r < valid.size() && !pick; ++r) pick = best_neighbour(model, valid[r].index, fresh);
      } else if (flat_next) {
        pick = basin_pick(model, valid, plateau_ms, fresh);
      }
      if (!pick) pick = model.best(fresh);
      if (!pick) break;
      out.push_back(*pick);
      model.lie(*pick);
    }
    return out;
  }

private:
  /// Measured candidates within 2% of one that make a plateau (see do_propose). Chosen on the search
  /// suite (benchmarks/RESULTS.md, "bayes-local: descents from other basins on a plateau", 400 seeds):
  /// at 10% / 25% budgets, 8 / 9 / 10 give convolution-w6600 0.66/0.11, 0.85/0.12, 0.80/0.15% mean
  /// regret, convolution-a100 0.37/0, 0.11/0, 0.11/0% and h200-stencil 0.38/0.14, 0.38/0.19, 0.38/0.20%.
  static constexpr std::size_t plateau_size = 9;

  /// A pick of the descent from another basin (multi-level single linkage over the measured
  /// candidates): the untried candidate near the fastest one that descent has measured; when that one
  /// is exhausted, a new descent from the fastest measured candidate off the plateau (slower than
  /// `plateau_ms`: the next candidate to descend from's time and 2%) that no descent has started from,
  /// that is not exhausted and that has no faster measured one-step neighbour (a descent from it would run into
  /// that neighbour's basin, searched already).
  template <class Fresh>
  std::optional<std::size_t> basin_pick(const detail::parzen_model& model, const std::vector<search_outcome>& valid,
                                        double plateau_ms, Fresh fresh) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::optional<std::size_t> lead;
      for (std::size_t i : descent_)
        if (std::isfinite(time_[i]) && (!lead || time_[i] < time_[*lead])) lead = i;
      if (lead)
        if (auto p = best_neighbour(model, *lead, fresh)) {
          descent_.push_back(*p);
          return p;
        }
      descent_.clear();
      for (const auto& v : valid) {
        if (exhausted_[v.index] || started_[v.index] || v.time_ms <= plateau_ms) continue;
        const auto& n = near(v.index);
        if (std::none_of(n.begin(), n.end(),
                         [&](const auto& js) { return js.second == 1 && time_[js.first] < v.time_ms; })) {
          started_[v.index] = 1;
          descent_.push_back(v.index);
          break;
        }
      }
      if (descent_.empty()) return std::nullopt;
    }
    return std::nullopt;
  }

  /// The untried candidate near `a` the model scores highest (ties: the lower index): one step away
  /// if any is untried, else two steps away on an ordered axis (over a value that is much slower than
  /// both of its sides, as tile size 3 between 2 and 4 is on convolution-w6600); nothing when all are
  /// taken, which is remembered (a taken candidate stays taken).
  template <class Fresh>
  std::optional<std::size_t> best_neighbour(const detail::parzen_model& model, std::size_t a, Fresh fresh) {
    if (exhausted_[a]) return std::nullopt;
    const auto& n = near(a);
    bool untaken = false;
    for (int tier = 1; tier <= 2; ++tier) {
      std::optional<std::size_t> pick;
      double best_s = 0;
      for (const auto& [j, steps] : n) {
        if (steps != tier) continue;
        untaken = untaken || !taken(j);
        if (fresh(j))
          if (const double s = model.score(j); !pick || s > best_s || (s == best_s && j < *pick)) {
            pick = j;
            best_s = s;
          }
      }
      if (pick) return pick;
    }
    exhausted_[a] = !untaken;
    return std::nullopt;
  }

  /// The candidates near `a` and their steps away (computed once): on an ordered axis, the nearest
  /// position the list holds in each direction (1 step, as search_space::neighbours) and the next one
  /// (2 steps), the other axes unchanged; on a categorical axis, every other value (1 step).
  const std::vector<std::pair<std::size_t, int>>& near(std::size_t a) {
    if (near_done_[a]) return near_[a];
    auto& out = near_[a];
    const auto& pa = space().coords(a);
    for (std::size_t d = 0; d < space().dimensions(); ++d) {
      const auto line = space().along(a, d);
      if (space().axes()[d].categorical() || pa[d] < 0) {
        for (std::size_t j : line) out.emplace_back(j, 1);
        continue;
      }
      std::vector<std::pair<int, std::size_t>> below, above; // (distance in positions, candidate)
      for (std::size_t j : line)
        if (const int q = space().coords(j)[d]; q >= 0) (q < pa[d] ? below : above).push_back({std::abs(q - pa[d]), j});
      for (auto* side : {&below, &above}) {
        std::sort(side->begin(), side->end());
        for (std::size_t k = 0; k < std::min<std::size_t>(2, side->size()); ++k)
          out.emplace_back((*side)[k].second, static_cast<int>(k) + 1);
      }
    }
    near_done_[a] = 1;
    return out;
  }

  std::size_t startup_ = 0, local_picks_ = 0, turn_ = 0, seen_ = 0, step_;
  std::vector<std::vector<std::pair<std::size_t, int>>> near_;
  std::vector<char> near_done_, exhausted_, started_;
  std::vector<double> time_;          ///< per candidate, its measured time (+inf: untried or failed)
  std::vector<std::size_t> descent_;  ///< the current descent from another basin: its start and picks
  bool pipelined_;
  double gamma_, explore_, local_share_;
};

COTUNE_DECL std::unique_ptr<search_session>
bayes_local_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, *this);
}

} // namespace cotune
