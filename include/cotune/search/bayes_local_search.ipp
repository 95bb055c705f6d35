#pragma once
/// \file The bodies of search/bayes_local_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
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
        for (std::size_t r = 0; r < valid.size() && !pick; ++r) pick = best_neighbour(model, valid[r].index, fresh);
      }
      if (!pick) pick = model.best(fresh);
      if (!pick) break;
      out.push_back(*pick);
      model.lie(*pick);
    }
    return out;
  }

private:
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

  std::size_t startup_ = 0, local_picks_ = 0, turn_ = 0, step_;
  std::vector<std::vector<std::pair<std::size_t, int>>> near_;
  std::vector<char> near_done_, exhausted_;
  bool pipelined_;
  double gamma_, explore_, local_share_;
};

COTUNE_DECL std::unique_ptr<search_session>
bayes_local_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, *this);
}

} // namespace cotune
