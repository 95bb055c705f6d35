#pragma once
/// \file Every shipped search strategy, and the one the knobs choose.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/search/bayes_local_search.hpp>
#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/evolutionary_search.hpp>
#include <cotune/search/exhaustive_search.hpp>
#include <cotune/search/local_search.hpp>
#include <cotune/search/search_knobs.hpp>
#include <cotune/search/search_registry.hpp>
#include <cotune/search/search_space.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// The strategy registered as `name` (a COTUNE_SEARCH value, see search_registry); nothing for an
/// unknown name.
[[nodiscard]] COTUNE_DECL std::shared_ptr<const search_strategy> search_named(const std::string& name);

/// The strategy COTUNE_SEARCH names; unset, exhaustive without a budget and bayes-local (the default
/// budgeted strategy) when `budget` is limited (its validator refuses unknown names; exhaustive if one
/// slips by).
[[nodiscard]] COTUNE_DECL std::shared_ptr<const search_strategy> search_from_knobs(const search_settings& budget = {});

/// `given`, completed by the knobs: its budget (`.evaluations` or `.fraction`; unset, the whole left
/// at 0) from COTUNE_SEARCH_BUDGET, `.wall_ms` if 0 from COTUNE_SEARCH_TIME_MS, and the seed from
/// COTUNE_SEARCH_SEED when `given` is unset.
[[nodiscard]] COTUNE_DECL search_settings search_settings_from_knobs(std::optional<search_settings> given);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search.ipp>
#endif
