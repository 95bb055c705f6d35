#pragma once
/// \file The HIP module's umbrella header: hiprtc + HIP runtime backend, benchmarker, knobs.
/// Link `cotune::hip` (it defines COTUNE_HAS_HIP); libamdhip64 (and libhiprtc) are opened at run time,
/// and no HIP header is needed to build.

#include <cotune/hip/availability.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_backend.hpp>
#include <cotune/hip/hip_benchmarker.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/hip/hiprtc_api.hpp>
