#pragma once
/// \file The HIP module's umbrella header: hiprtc + HIP runtime backend, benchmarker, knobs.
/// Link `cotune::hip` (it defines COTUNE_HAS_HIP); libamdhip64 (and libhiprtc) are opened at run time,
/// and no HIP header is needed to build. With COTUNE_SEPARATE_COMPILATION it also declares the HIP
/// tuners' job compiled once (<cotune/impl/hip_src.hpp>, in `cotune::cotune_separate`).

#include <cotune/detail/config.hpp>
#include <cotune/hip/availability.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_backend.hpp>
#include <cotune/hip/hip_benchmarker.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/hip/hiprtc_api.hpp>

#if !COTUNE_HEADER_ONLY
#include <cotune/cache/file_cache.hpp>
#include <cotune/tune/job_instantiation.hpp>

// COTUNE_SEPARATE_COMPILATION: a HIP tuner's job, table of keys and core over the file cache (the bulk of a
// tuner's code, the same for every kernel signature) are compiled once, in <cotune/impl/hip_src.hpp>.
COTUNE_EXTERN_TUNING_JOB(cotune::hip::hip_backend, cotune::hip::hip_benchmarker, cotune::file_cache);
#endif
