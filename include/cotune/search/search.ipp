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
  if (name == "exhaustive") return std::make_shared<exhaustive_search>();
  if (name == "random") return std::make_shared<random_search>();
  if (name == "local") return std::make_shared<local_search>();
  if (name == "evolution") return std::make_shared<evolutionary_search>();
  if (name == "bayes") return std::make_shared<bayesian_search>();
  return nullptr;
}

COTUNE_DECL std::shared_ptr<const search_strategy> search_from_knobs() {
  auto s = search_named(search_knobs().strategy.get());
  return s ? s : std::make_shared<exhaustive_search>();
}

COTUNE_DECL search_settings search_settings_from_knobs(std::optional<search_settings> given) {
  search_settings s = given.value_or(search_settings{});
  if (!given || s.evaluations == 0) s.evaluations = static_cast<std::size_t>(search_knobs().budget.get());
  if (!given || s.wall_ms == 0) s.wall_ms = static_cast<double>(search_knobs().time_ms.get());
  if (!given) s.seed = static_cast<std::uint64_t>(search_knobs().seed.get());
  return s;
}

} // namespace cotune
