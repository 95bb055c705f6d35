#pragma once
/// \file Every shipped search strategy, and the one the knobs choose.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/evolutionary_search.hpp>
#include <cotune/search/exhaustive_search.hpp>
#include <cotune/search/local_search.hpp>
#include <cotune/search/search_knobs.hpp>
#include <cotune/search/search_space.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// The strategy named `name` (a COTUNE_SEARCH value); nothing for an unknown name.
[[nodiscard]] COTUNE_DECL std::shared_ptr<const search_strategy> search_named(const std::string& name);

/// The strategy COTUNE_SEARCH names (its validator refuses other names; exhaustive if one slips by).
[[nodiscard]] COTUNE_DECL std::shared_ptr<const search_strategy> search_from_knobs();

/// `given`, with each field left at 0 taken from the knobs COTUNE_SEARCH_BUDGET, COTUNE_SEARCH_TIME_MS
/// and COTUNE_SEARCH_SEED.
[[nodiscard]] COTUNE_DECL search_settings search_settings_from_knobs(std::optional<search_settings> given);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search.ipp>
#endif
