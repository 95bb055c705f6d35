#pragma once
/// \file `cotune::bayes_local_search`: the default budgeted strategy: a TPE model that proposes both
/// across the space and beside the best candidates found.

#include <cstddef>
#include <memory>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Model-based search with local refinement. After `startup` random candidates (or a tenth of the
/// budget, whichever is more), each pick is, with probability `explore`, a random candidate; else,
/// alternately, the untried candidate the TPE model (see bayesian_search) scores highest anywhere, and
/// the one it scores highest among the neighbours (search_space::neighbours: one step on an ordered
/// axis, any other value of a categorical one) of the fastest measured candidates, the fastest first.
/// The global picks find the good regions (and the good value of a selector); the local picks take
/// the best region's last few percent, which the model's per-axis densities cannot see. A batch is
/// spread by the model's constant liar. Chosen by measurement over every space of
/// benchmarks/bench_search_strategies.cpp (docs/search.md has the table).
class bayes_local_search final : public search_strategy {
public:
  explicit bayes_local_search(std::size_t startup = 10, double gamma = 0.2, double explore = 0.05,
                              double local_share = 0.7)
      : startup_(startup), gamma_(gamma), explore_(explore), local_share_(local_share) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "bayes-local"; }

private:
  std::size_t startup_;
  double gamma_, explore_, local_share_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/bayes_local_search.ipp>
#endif
