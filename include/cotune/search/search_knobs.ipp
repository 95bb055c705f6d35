#pragma once
/// \file The bodies of search/search_knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/search/search_knobs.hpp>

namespace cotune {

COTUNE_DECL search_knob_group& search_knobs() { return knob_group<search_knob_group>(); }

namespace detail {
/// Registers the group during static initialisation, so that `cotune knobs` lists it (and cache keys
/// see its invalidating knobs). With COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp
/// file; header-only, made by each file that instantiates a tuner (tune/process_setup.hpp).
#if !COTUNE_HEADER_ONLY
COTUNE_DECL search_knob_group& search_knobs_registered = search_knobs();
#endif
} // namespace detail

} // namespace cotune
