#pragma once
/// \file The bodies of search/search_knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/core.h>

#include <cotune/search/search_knobs.hpp>

namespace cotune {

COTUNE_DECL search_knob_group& search_knobs() { return knob_group<search_knob_group>(); }

namespace detail {

COTUNE_DECL search_settings search_budget_of(const std::string& text) {
  const auto refuse = [&](std::string_view why) {
    throw knob_error(
        fmt::format(COTUNE_FMT("COTUNE_SEARCH_BUDGET={} {}; give a count of candidates (64), a share of them (25%), "
                               "or 0 for the strategy's default"),
                    text, why));
  };
  search_settings s;
  if (text.ends_with('%')) {
    double percent = 0;
    const char* end = text.data() + text.size() - 1;
    auto [stop, ec] = std::from_chars(text.data(), end, percent);
    if (ec != std::errc{} || stop != end || !std::isfinite(percent)) refuse("is not a percentage");
    if (!(percent > 0)) refuse("is no share of the candidates (it must be above 0%)");
    if (percent > 100) refuse("is more than all the candidates (at most 100%)");
    s.fraction = percent / 100;
    return s;
  }
  std::uint64_t n = 0;
  auto [stop, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || stop != text.data() + text.size()) refuse("is neither a count nor a percentage");
  s.evaluations = static_cast<std::size_t>(n);
  return s;
}

COTUNE_DECL void check_search_name(const std::string& name) {
  if (search_registry::instance().contains(name)) return;
  std::string names;
  for (const auto& n : search_registry::instance().names()) names += (names.empty() ? "" : ", ") + n;
  throw knob_error(
      fmt::format(COTUNE_FMT("COTUNE_SEARCH={} is not a registered search strategy; the strategies are: {} "
                             "(cotune::register_search adds one)"),
                  name, names));
}

COTUNE_DECL std::string search_strategy_doc() {
  return fmt::format(
      COTUNE_FMT("which candidates a tuning measures, a registered strategy: {}; all but exhaustive stop at "
                 "COTUNE_SEARCH_BUDGET; unset: exhaustive, or bayes-local when a budget is set"),
      search_registry::instance().describe());
}

} // namespace detail

namespace detail {
/// Registers the group during static initialisation, so that `cotune knobs` lists it (and cache keys
/// see its invalidating knobs). With COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp
/// file; header-only, made by each file that instantiates a tuner (tune/process_setup.hpp).
#if !COTUNE_HEADER_ONLY
COTUNE_DECL search_knob_group& search_knobs_registered = search_knobs();
#endif
} // namespace detail

} // namespace cotune
