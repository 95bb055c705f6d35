#pragma once
/// \file `cotune::bayes_local_search`: the default budgeted strategy: a TPE model that proposes both
/// across the space and beside the best candidates found.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Model-based search with local refinement. After `startup` random candidates (or a tenth of the budget, whichever is
/// more), each pick is, with probability `explore`, a random candidate; else, with probability `local_share`, a local
/// pick: the untried neighbour (search_space::neighbours: one step on an ordered axis, any other value of a categorical
/// one) that the TPE model (see bayesian_search) scores highest, beside the fastest measured candidate that has one
/// (once all of a candidate's neighbours are taken, its candidates two positions away on an ordered axis: a local step
/// can then cross a value much slower than both of its sides, which on the suite's convolution-w6600 hides the optimum,
/// see benchmarks/search_suite/README.md), and every other local pick beside a runner-up instead: per categorical axis,
/// the fastest candidate with another value than the best's (the best of the second-best method of a selector, so that
/// the method whose region was found first cannot hide a faster one); else a global pick, the untried candidate the
/// model scores highest anywhere. Global picks find the good regions and values, local picks take the best region's
/// last few percent, which the model's per-axis densities cannot see. On a plateau (9 measured candidates within 2% of
/// one), picks go instead to descents from other basins: the ranked list's (beside the runner-ups) when the best is on
/// one, the model's global picks when the next candidate to descend from is; each descent starts at the fastest
/// measured candidate off the plateau that has no faster measured neighbour and goes on beside its own fastest until
/// that one's neighbours are all taken (multi-level single linkage). On convolution-w6600 the optimum is a needle in a
/// basin that neither the plateau's descent nor the model reaches (RESULTS.md, "bayes-local: descents from other basins
/// on a plateau"). A batch is spread by the model's constant liar. After the random start, batches of `step` wait for
/// the previous one's outcomes, as local_search's do (fewest evaluations; a tuning pays each batch's compile latency in
/// turn): waiting with batches of 4 took the regret at a 10% budget from 0.59-1.32% to 0.42-1.13% on the three H200
/// ground truths and from 0.77-0.88% to 0.08-0.11% on the reduction and the selector (100 seeds, against 8 proposed
/// while 8 are in flight); `pipelined` proposes without waiting. The constants were chosen by measurement on the spaces
/// of benchmarks/bench_search_strategies.cpp (`bayes-local:STARTUP:GAMMA:EXPLORE:LOCAL_SHARE` there runs other ones;
/// docs/search.md has the table).
class bayes_local_search final : public search_strategy {
public:
  /// `step`: candidates per batch after the random start; `pipelined`: propose while a batch is in
  /// flight instead of waiting for its outcomes (as local_search's).
  explicit bayes_local_search(std::size_t startup = 10, double gamma = 0.2, double explore = 0.05,
                              double local_share = 0.85, std::size_t step = 4, bool pipelined = false)
      : startup_(startup), step_(std::max<std::size_t>(1, step)), gamma_(gamma), explore_(explore),
        local_share_(local_share), pipelined_(pipelined) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "bayes-local"; }

private:
  std::size_t startup_, step_;
  double gamma_, explore_, local_share_;
  bool pipelined_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/bayes_local_search.ipp>
#endif
