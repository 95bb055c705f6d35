#pragma once
/// \file The body of cuda/cuda_knobs.hpp and the group's registration. Header-only, included by that
/// header; with COTUNE_SEPARATE_COMPILATION compiled once, by <cotune/impl/cuda_src.hpp> (a member of
/// `cotune::cotune_separate` when the CUDA module is built), which every file including the header
/// refers to (so a static link brings it in).

#include <cotune/cuda/cuda_knobs.hpp>

namespace cotune::cuda {

COTUNE_DECL cuda_knob_group& cuda_knobs() { return knob_group<cuda_knob_group>(); }

namespace detail {
/// Registers the CUDA knobs during static initialisation, so that the invalidating ones enter every
/// key computed in a program that includes this module, even before any CUDA call.
COTUNE_DECL cuda_knob_group& cuda_knobs_registered = cuda_knobs();
} // namespace detail

} // namespace cotune::cuda
