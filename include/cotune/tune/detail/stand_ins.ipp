#pragma once
/// \file The bodies of tune/detail/stand_ins.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/tune/detail/stand_ins.hpp>

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

} // namespace cotune::detail
