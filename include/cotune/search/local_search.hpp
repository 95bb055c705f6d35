#pragma once
/// \file `cotune::local_search`: best-first local search over neighbouring parameter values.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Starts from `starts` random candidates, then repeatedly takes the fastest candidate measured so
/// far that still has untried neighbours (one step on one axis, see `search_space::neighbours`: on a
/// categorical axis every other value is one step away, so a selector is never walked as a line) and
/// proposes `step` of them. First the steps that helped beside it: a step's effect is read off the
/// same step (same axis, same target value) measured from the nearest measured candidates that differ
/// from the point on one other axis, and the steps with no such pair count as no change; then the
/// moves that most often helped: each (axis, direction) keeps a count of how often a step that way
/// was faster than the candidate it left (failed steps count as not faster); then the axes in turn,
/// starting after the axis of the step that reached the point, each axis's step towards its longer
/// side before its other one. A faster neighbour becomes the next point to expand at once (first
/// improvement), and when the best point's neighbourhood is used up the next fastest is expanded, so
/// the search walks the plateau around the best candidates instead of restarting at random; a batch
/// the fastest point cannot fill is filled from the next fastest. Only when every measured candidate's
/// neighbourhood is used up does it draw random candidates again.
///
/// Line moves (ordered axes only): on a plateau one step tells nothing (the neighbours are as fast), and the best value of
/// a flat axis can lie several steps away. So when every one-step neighbour of a point along an axis
/// has been measured, none failed and none is more than `flat` (a fraction) slower than the point, the
/// axis is flat there, and the point's other positions on that axis become candidates too, after its
/// one-step moves, ordered as one-step moves are by the effect seen beside the point, then the middle
/// of the widest untried stretch of the line first (an axis's end value is the likeliest extreme), then
/// the furthest (only for the fastest point with a flat axis; a negative `flat` turns them off).
/// Measured on three real H200 spaces, line moves cut the evaluations the reduction needs to come
/// within 2% of its optimum by a seventh (benchmarks/RESULTS.md).
///
/// By default each batch waits for the previous one's outcomes: fewest evaluations, but a tuning pays
/// each batch's compile latency in turn. `pipelined`: a batch is also proposed while another is in
/// flight (from what is known, as the session's depth allows), keeping the compile pool busier for
/// more evaluations.
class local_search final : public search_strategy {
public:
  /// `starts`: random candidates measured before the first step; `step`: candidates per batch;
  /// `pipelined`: propose while a batch is in flight instead of waiting for its outcomes; `flat`: how
  /// much slower (a fraction) a neighbour may be for its axis to count as flat (line moves; < 0: none).
  explicit local_search(std::size_t starts = 4, std::size_t step = 3, bool pipelined = false, double flat = 0.02)
      : starts_(std::max<std::size_t>(1, starts)), step_(std::max<std::size_t>(1, step)), pipelined_(pipelined),
        flat_(flat) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "local"; }

private:
  std::size_t starts_, step_;
  bool pipelined_;
  double flat_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/local_search.ipp>
#endif
