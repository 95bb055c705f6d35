#pragma once
/// \file The bodies of tune/tuning_phases.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/tune/tuning_phases.hpp>

namespace cotune {

COTUNE_DECL std::string tuning_phases::text() const {
  struct part {
    const char* name;
    double ms;
  };
  part parts[] = {{"compile", wall.compile}, {"load", wall.load}, {"verify", wall.verify}, {"measure", wall.measure}};
  std::stable_sort(std::begin(parts), std::end(parts), [](const part& a, const part& b) { return a.ms > b.ms; });
  std::string out;
  for (const auto& p : parts)
    if (p.ms >= 50) out += fmt::format(COTUNE_FMT("{}{} {:.1f} s"), out.empty() ? "" : ", ", p.name, p.ms / 1000.0);
  out += fmt::format(COTUNE_FMT("{}idle {:.1f} s"), out.empty() ? "" : ", ", idle_ms / 1000.0);
  return out;
}

} // namespace cotune
