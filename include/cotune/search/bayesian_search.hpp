#pragma once
/// \file `cotune::bayesian_search`: model-based search with a tree-structured Parzen estimator (TPE).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Bergstra et al.'s TPE over the finite candidate list. After `startup` random candidates, the
/// measured ones are split into good (the fastest `gamma` fraction) and bad (the rest, and every
/// failed candidate: a compile error or out of resources makes its parameter values less likely);
/// each axis gets a Parzen density of the good and of the bad positions (weight 1 on the position,
/// 1/2 one step away, 1/4 two steps, plus a prior of 1 per position), and the untried candidates
/// with the highest ratio good/bad, summed in logs over the axes, are proposed. A batch is
/// diversified by counting each pick as bad for the next ("constant liar"). With probability
/// `explore` a pick is a random candidate instead, so the model cannot lock itself in.
class bayesian_search final : public search_strategy {
public:
  explicit bayesian_search(std::size_t startup = 10, double gamma = 0.25, double explore = 0.1)
      : startup_(startup), gamma_(gamma), explore_(explore) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "bayes"; }

private:
  std::size_t startup_;
  double gamma_, explore_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/bayesian_search.ipp>
#endif
