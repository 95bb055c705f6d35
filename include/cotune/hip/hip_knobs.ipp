#pragma once
/// \file The body of hip/hip_knobs.hpp and the group's registration. Header-only, included by that
/// header; with COTUNE_SEPARATE_COMPILATION compiled once, by <cotune/impl/hip_src.hpp> (a member of
/// `cotune::cotune_separate` when the HIP module is built), which every file including the header
/// refers to (so a static link brings it in).

#include <cotune/hip/hip_knobs.hpp>

namespace cotune::hip {

COTUNE_DECL hip_knob_group& hip_knobs() { return knob_group<hip_knob_group>(); }

namespace detail {
/// Registers the HIP knobs during static initialisation, so that the invalidating ones enter every
/// key computed in a program that includes this module.
COTUNE_DECL hip_knob_group& hip_knobs_registered = hip_knobs();
} // namespace detail

} // namespace cotune::hip
