#pragma once
/// \file The bodies of tune/detail/stand_ins.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include <fmt/core.h>

#include <cotune/tune/detail/stand_ins.hpp>
#include <cotune/tune/key_distance.hpp>
#include <cotune/tune/winner_source.hpp>

namespace cotune::detail {

COTUNE_DECL bool same_choice(const config& a, const config& b, const std::vector<std::string>& ignored) {
  if (!(a.launch() == b.launch())) return false;
  auto is_ignored = [&](const std::string& n) {
    for (const auto& i : ignored)
      if (i == n) return true;
    return false;
  };
  std::size_t counted = 0;
  for (const auto& [name, v] : a.params()) {
    if (is_ignored(name)) continue;
    ++counted;
    const value* other = b.find(name);
    if (!other || !(*other == v)) return false;
  }
  std::size_t counted_b = 0;
  for (const auto& p : b.params())
    if (!is_ignored(p.first)) ++counted_b;
  return counted == counted_b;
}

COTUNE_DECL std::vector<std::pair<double, const tuning_result*>>
nearest_keys(const std::string& key_text, const std::vector<std::shared_ptr<const tuning_result>>& tuned,
             bool with_same_key) {
  const key_shape shape = key_shape::of(key_text);
  std::vector<std::pair<double, const tuning_result*>> near;
  for (const auto& r : tuned)
    if (auto d = key_distance(shape, key_shape::of(r->key_text)); d && std::isfinite(*d) && (with_same_key || *d > 0))
      near.emplace_back(*d, r.get());
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return near;
}

COTUNE_DECL std::optional<config> shipped_winner(std::string_view kernel, std::string_view key_text,
                                                 const std::function<std::string()>& device_name,
                                                 const std::vector<config>& pruned, std::string& warning) {
  const auto& source = shipped_winner_source();
  if (!source) return std::nullopt;
  try {
    if (auto shipped = source(kernel, key_text, device_name(), pruned)) return shipped->best();
  } catch (const std::exception& e) {
    warning = fmt::format(COTUNE_FMT("the shipped tuning database is unusable ({}); no stand-in from it"), e.what());
  }
  return std::nullopt;
}

COTUNE_DECL std::vector<stand_in_choice>
stand_in_choices(const std::string& key_text, const std::vector<config>& pruned,
                 const std::vector<std::string>& heuristics, const std::optional<config>& shipped,
                 const std::vector<std::shared_ptr<const tuning_result>>& tuned,
                 const std::optional<config>& default_config) {
  std::vector<stand_in_choice> out;
  auto add = [&](const config& c, stand_in_source src, std::string neighbour) {
    for (std::size_t i = 0; i < pruned.size(); ++i)
      if (same_choice(pruned[i], c, heuristics)) {
        for (const auto& o : out)
          if (o.index == i) return;
        out.push_back({i, src, std::move(neighbour)});
        return;
      }
  };
  if (shipped) add(*shipped, stand_in_source::database, {});
  for (const auto& [d, r] : nearest_keys(key_text, tuned, true))
    add(r->best(), stand_in_source::neighbour, r->key_text);
  if (default_config) add(*default_config, stand_in_source::default_config, {});
  if (!pruned.empty()) add(pruned.front(), stand_in_source::first, {});
  return out;
}

COTUNE_DECL std::vector<std::size_t>
nearest_winners(const std::string& key_text, const std::vector<config>& pruned,
                const std::vector<std::string>& heuristics,
                const std::vector<std::shared_ptr<const tuning_result>>& tuned, std::size_t at_most) {
  std::vector<std::size_t> seeds;
  for (const auto& [d, r] : nearest_keys(key_text, tuned, false)) {
    if (seeds.size() == at_most) break;
    for (std::size_t i = 0; i < pruned.size(); ++i)
      if (same_choice(pruned[i], r->best(), heuristics)) {
        if (std::find(seeds.begin(), seeds.end(), i) == seeds.end()) seeds.push_back(i);
        break;
      }
  }
  return seeds;
}

} // namespace cotune::detail
