#pragma once
/// \file The CUDA module's umbrella header: NVRTC + driver API backend, device buffers, benchmarker
/// (and with it the isolation worker's entry), knobs. Include it (or cuda/cuda_benchmarker.hpp) before
/// naming a CUDA tuner: the default benchmarker is chosen where the tuner's type is first named, and
/// the CUDA backend declares `default_benchmarker_type = cuda_benchmarker` (CUDA events, never the host
/// clock, which times only the launch of asynchronous GPU work). Grids: `cotune::grid` with
/// `cdiv(n, p("BLOCK"))` (backend/launch_geometry.hpp, core/grid_expr.hpp).
/// Link `cotune::cuda` (it defines COTUNE_HAS_CUDA); libcuda and libnvrtc are opened at run time. With
/// COTUNE_SEPARATE_COMPILATION it also declares the CUDA tuners' job compiled once
/// (<cotune/impl/cuda_src.hpp>, in `cotune::cotune_separate`).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/float16.hpp>
#include <cotune/cuda/nvrtc_api.hpp>

#if !COTUNE_HEADER_ONLY
#include <cotune/cache/file_cache.hpp>
#include <cotune/tune/job_instantiation.hpp>

// COTUNE_SEPARATE_COMPILATION: a CUDA tuner's job, table of keys and core over the file cache (the bulk of a
// tuner's code, the same for every kernel signature) are compiled once, in <cotune/impl/cuda_src.hpp>.
COTUNE_EXTERN_TUNING_JOB(cotune::cuda::cuda_backend, cotune::cuda::cuda_benchmarker, cotune::file_cache);
#endif
