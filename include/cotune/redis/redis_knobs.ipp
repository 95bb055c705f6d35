#pragma once
/// \file The body of redis/redis_knobs.hpp and the group's registration. Header-only, included by that
/// header; with COTUNE_SEPARATE_COMPILATION compiled once, by <cotune/impl/redis_src.hpp> (a member of
/// `cotune::cotune_separate` when the Redis module is built), which every file including the header
/// refers to (so a static link brings it in).

#include <cotune/redis/redis_knobs.hpp>

namespace cotune::redis {

COTUNE_DECL redis_knob_group& redis_knobs() { return knob_group<redis_knob_group>(); }

namespace detail {
/// Registers the Redis knobs during static initialisation of any program that includes this module,
/// so that the knob registry (and `cotune knobs`) lists them before first use.
COTUNE_DECL redis_knob_group& redis_knobs_registered = redis_knobs();
} // namespace detail

} // namespace cotune::redis
