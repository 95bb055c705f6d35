#pragma once
/// \file `cotune::local_search`: best-first local search over neighbouring parameter values.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Starts from `starts` random candidates, then repeatedly takes the fastest candidate measured so
/// far that still has untried neighbours (one step on one axis, see `search_space::neighbours`) and
/// proposes `step` of them, the moves that most often helped first: each (axis, direction) keeps a
/// count of how often a step that way was faster than the candidate it left (failed steps count as
/// not faster). A faster neighbour becomes the next point to expand at once (first improvement), and
/// when the best point's neighbourhood is used up the next fastest is expanded, so the search walks
/// the plateau around the best candidates instead of restarting at random. Only when every measured
/// candidate's neighbourhood is used up does it draw random candidates again. By default each batch
/// waits for the previous one's outcomes: fewest evaluations, but a tuning pays each batch's compile
/// latency in turn. `pipelined`: a batch is also proposed while another is in flight (from what is
/// known, as the session's depth allows), keeping the compile pool busier for more evaluations.
class local_search final : public search_strategy {
public:
  /// `starts`: random candidates measured before the first step; `step`: neighbours per batch;
  /// `pipelined`: propose while a batch is in flight instead of waiting for its outcomes.
  explicit local_search(std::size_t starts = 4, std::size_t step = 3, bool pipelined = false)
      : starts_(std::max<std::size_t>(1, starts)), step_(std::max<std::size_t>(1, step)), pipelined_(pipelined) {}

protected:
  class session final : public search_session {
  public:
    session(const search_space& sp, const search_settings& st, std::size_t depth, const local_search& o)
        : search_session(sp, st, default_search_evaluations(sp.size()), depth), starts_(o.starts_), step_(o.step_),
          pipelined_(o.pipelined_), wins_(2 * sp.dimensions(), 0), tries_(2 * sp.dimensions(), 0) {}

  protected:
    std::vector<std::size_t> do_propose(std::size_t want) override {
      std::vector<std::size_t> out;
      const std::size_t seen = history().size() + in_flight();
      if (seen < starts_) return draw(std::min(want, starts_ - seen));
      if (in_flight() > 0 && !pipelined_) return out; // each step learns from the one before
      std::vector<search_outcome> valid;
      for (const auto& h : history())
        if (h.valid()) valid.push_back(h);
      std::stable_sort(valid.begin(), valid.end(), [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
      for (const auto& v : valid) {
        std::vector<std::size_t> next;
        for (std::size_t j : space().neighbours(v.index))
          if (!taken(j)) next.push_back(j);
        if (next.empty()) continue;
        std::stable_sort(next.begin(), next.end(),
                         [&](std::size_t a, std::size_t b) { return promise(v.index, a) > promise(v.index, b); });
        next.resize(std::min({next.size(), step_, want}));
        for (std::size_t j : next) from_[j] = v.index;
        return next;
      }
      return draw(std::min(want, starts_)); // every neighbourhood used up (or nothing ran): start afresh
    }

    void do_tell(const search_outcome& o) override {
      if (o.valid()) time_[o.index] = o.time_ms;
      auto it = from_.find(o.index);
      if (it == from_.end()) return;
      const std::size_t m = move(it->second, o.index);
      ++tries_[m];
      if (o.valid() && o.time_ms < time_.at(it->second)) ++wins_[m];
    }

  private:
    std::vector<std::size_t> draw(std::size_t n) {
      std::vector<std::size_t> out;
      while (out.size() < n)
        if (auto r = random_untaken(); r && std::find(out.begin(), out.end(), *r) == out.end()) out.push_back(*r);
        else break;
      return out;
    }
    /// The (axis, direction) slot of the step from `a` to its neighbour `b`.
    [[nodiscard]] std::size_t move(std::size_t a, std::size_t b) const {
      const auto &p = space().coords(a), &q = space().coords(b);
      for (std::size_t d = 0; d < p.size(); ++d)
        if (p[d] != q[d]) return 2 * d + (q[d] > p[d] ? 1 : 0);
      return 0;
    }
    /// How often that move helped, smoothed (Laplace): 1/2 before any try.
    [[nodiscard]] double promise(std::size_t a, std::size_t b) const {
      const std::size_t m = move(a, b);
      return (static_cast<double>(wins_[m]) + 1) / (static_cast<double>(tries_[m]) + 2);
    }

    std::size_t starts_, step_;
    bool pipelined_;
    std::vector<std::size_t> wins_, tries_;
    std::map<std::size_t, std::size_t> from_; ///< proposed neighbour -> the candidate it steps from
    std::map<std::size_t, double> time_;      ///< valid delivered outcomes
  };

  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                           std::size_t depth) const override {
    return std::make_unique<session>(sp, st, depth, *this);
  }
  std::string do_name() const override { return "local"; }

private:
  std::size_t starts_, step_;
  bool pipelined_;
};

} // namespace cotune
