#pragma once
/// \file The bodies of knobs/knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cstdlib>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

COTUNE_DECL knob_groups& knobs() { return knob_group<knob_groups>(); }

namespace detail {

COTUNE_DECL std::string user_cache_root() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return xdg;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache";
  return ".cache";
}
COTUNE_DECL std::string default_cache_dir() { return user_cache_root() + "/cotune"; }
COTUNE_DECL std::string default_dump_dir() { return user_cache_root() + "/cotune-dump"; }
COTUNE_DECL std::string default_override_dir() { return user_cache_root() + "/cotune-override"; }

COTUNE_DECL void throw_below_minimum(const char* env, const std::string& value, const std::string& minimum) {
  throw knob_error(fmt::format(COTUNE_FMT("{}={} is out of range; it must be at least {}"), env, value, minimum));
}

/// Constructs the core knobs during static initialisation, so that the registry lists them (and
/// `invalidating_text()` hashes them into keys) even before anything calls `knobs()`: otherwise the
/// first key computed in a process could miss COTUNE_HOST_CXXFLAGS and differ from later ones.
/// With COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp file; header-only, made by
/// each file that instantiates a tuner (tune/process_setup.hpp), so that other files do not emit the
/// registration and the code it calls.
#if !COTUNE_HEADER_ONLY
COTUNE_DECL knob_groups& core_knobs_registered = knobs();
#endif
} // namespace detail

} // namespace cotune
