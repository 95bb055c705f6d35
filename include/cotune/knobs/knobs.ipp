#pragma once
/// \file The bodies of knobs/knobs.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/knobs/knobs.hpp>

namespace cotune {

COTUNE_DECL knob_groups& knobs() { return knob_group<knob_groups>(); }

} // namespace cotune
