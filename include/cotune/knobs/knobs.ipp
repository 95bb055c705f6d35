#pragma once
/// \file The bodies of knobs/knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/knobs/knobs.hpp>

namespace cotune {

COTUNE_DECL knob_groups& knobs() { return knob_group<knob_groups>(); }

namespace detail {
/// Constructs the core knobs during static initialisation, so that the registry lists them (and
/// `invalidating_text()` hashes them into keys) even before anything calls `knobs()`: otherwise the
/// first key computed in a process could miss COTUNE_HOST_CXXFLAGS and differ from later ones.
/// Header-only, an inline variable of every file that includes knobs.hpp; with
/// COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp file, so that other files do not
/// emit the registration and the code it calls.
COTUNE_DECL knob_groups& core_knobs_registered = knobs();
} // namespace detail

} // namespace cotune
