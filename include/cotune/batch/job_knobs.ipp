#pragma once
/// \file The bodies of batch/job_knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/batch/job_knobs.hpp>

namespace cotune::batch {

COTUNE_DECL job_knob_group& job_knobs() { return knob_group<job_knob_group>(); }

namespace detail {
/// Registers the group during static initialisation, so that `cotune knobs` lists it (and cache keys
/// see its invalidating knobs). With COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp
/// file; header-only, made by each file that instantiates a tuner (tune/process_setup.hpp).
#if !COTUNE_HEADER_ONLY
COTUNE_DECL job_knob_group& job_knobs_registered = job_knobs();
#endif
} // namespace detail

} // namespace cotune::batch
