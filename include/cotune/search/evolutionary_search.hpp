#pragma once
/// \file `cotune::evolutionary_search`: a steady-state genetic algorithm over parameter positions.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// A first generation of `population` random candidates; then each child takes every parameter
/// from one of two parents (each the faster of two drawn from the `population` fastest candidates
/// measured so far), changes each parameter with probability 1/axes (on an ordered axis one step or
/// a random value; on a categorical one the value of a random candidate, with no step by distance),
/// and becomes the untried candidate nearest that point (a different categorical value is a whole axis
/// away, see `search_space::distance`). Failed candidates are never parents.
class evolutionary_search final : public search_strategy {
public:
  explicit evolutionary_search(std::size_t population = 16) : population_(std::max<std::size_t>(2, population)) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "evolution"; }

private:
  std::size_t population_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/evolutionary_search.ipp>
#endif
