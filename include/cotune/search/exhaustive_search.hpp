#pragma once
/// \file `cotune::exhaustive_search` (the default) and `cotune::random_search`.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Every candidate in config order (with a budget: the first ones). Without a budget the tuning is
/// exactly the one before search strategies existed: all candidates compiled at once.
class exhaustive_search final : public search_strategy {
protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "exhaustive"; }
  bool do_evaluates_all() const override { return true; }
};

/// Candidates drawn uniformly without replacement: the baseline every other strategy must beat.
class random_search final : public search_strategy {
protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "random"; }
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/exhaustive_search.ipp>
#endif
