#pragma once
/// \file The bodies of search/search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <cotune/search/search.hpp>

namespace cotune {

COTUNE_DECL std::shared_ptr<const search_strategy> search_named(const std::string& name) {
  return search_registry::instance().make(name);
}

COTUNE_DECL std::shared_ptr<const search_strategy> search_from_knobs(const search_settings& budget) {
  const auto& knob = search_knobs().strategy;
  // A budget with no strategy named: the first N candidates in config order would be a poor pick.
  auto s = search_named(!knob.is_set() && budget.limited() ? "bayes-local" : knob.get());
  return s ? s : std::make_shared<exhaustive_search>();
}

COTUNE_DECL search_settings search_settings_from_knobs(std::optional<search_settings> given) {
  search_settings s = given.value_or(search_settings{});
  if (!given || (s.evaluations == 0 && s.fraction == 0)) {
    const search_settings knob = detail::search_budget_of(search_knobs().budget.get());
    s.evaluations = knob.evaluations;
    s.fraction = knob.fraction;
  }
  if (!given || s.wall_ms == 0) s.wall_ms = static_cast<double>(search_knobs().time_ms.get());
  if (!given) s.seed = static_cast<std::uint64_t>(search_knobs().seed.get());
  return s;
}

} // namespace cotune
