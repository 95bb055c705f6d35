#pragma once
/// \file Every shipped search strategy, and the one the knobs choose.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <cotune/search/bayesian_search.hpp>
#include <cotune/search/evolutionary_search.hpp>
#include <cotune/search/exhaustive_search.hpp>
#include <cotune/search/local_search.hpp>
#include <cotune/search/search_knobs.hpp>
#include <cotune/search/search_space.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// The strategy named `name` (a COTUNE_SEARCH value); nothing for an unknown name.
[[nodiscard]] inline std::shared_ptr<const search_strategy> search_named(const std::string& name) {
  if (name == "exhaustive") return std::make_shared<exhaustive_search>();
  if (name == "random") return std::make_shared<random_search>();
  if (name == "local") return std::make_shared<local_search>();
  if (name == "evolution") return std::make_shared<evolutionary_search>();
  if (name == "bayes") return std::make_shared<bayesian_search>();
  return nullptr;
}

/// The strategy COTUNE_SEARCH names (its validator refuses other names; exhaustive if one slips by).
[[nodiscard]] inline std::shared_ptr<const search_strategy> search_from_knobs() {
  auto s = search_named(search_knobs().strategy.get());
  return s ? s : std::make_shared<exhaustive_search>();
}

/// `given`, with each field left at 0 taken from the knobs COTUNE_SEARCH_BUDGET, COTUNE_SEARCH_TIME_MS
/// and COTUNE_SEARCH_SEED.
[[nodiscard]] inline search_settings search_settings_from_knobs(std::optional<search_settings> given) {
  search_settings s = given.value_or(search_settings{});
  if (!given || s.evaluations == 0) s.evaluations = static_cast<std::size_t>(search_knobs().budget.get());
  if (!given || s.wall_ms == 0) s.wall_ms = static_cast<double>(search_knobs().time_ms.get());
  if (!given) s.seed = static_cast<std::uint64_t>(search_knobs().seed.get());
  return s;
}

} // namespace cotune
