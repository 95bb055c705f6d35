#pragma once
/// \file The CUDA module's separately compiled part, for COTUNE_SEPARATE_COMPILATION: a program that uses
/// the module and compiles <cotune/impl/src.hpp> itself (without CMake) compiles this header in one file
/// too. The `cotune::cotune_separate` CMake target holds it when the module is built.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/cuda_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cotune/cuda/cuda_knobs.ipp>
#include <cotune/cuda/availability.ipp>
#include <cotune/cuda/device.ipp>
#include <cotune/cuda/device_buffer.ipp>
#include <cotune/cuda/driver_api.ipp>
#include <cotune/cuda/nvrtc_api.ipp>
#include <cotune/cuda/cuda_backend.ipp>
#include <cotune/cuda/compiled_backend.ipp>
#include <cotune/cuda/isolation.ipp>

// The CUDA tuners' jobs, tables of keys and cores over the file cache (declared `extern template` by
// <cotune/cuda/cuda.hpp> and <cotune/batch/cuda_kernel_runner.hpp>).
#include <cotune/impl/cuda_jobs_src.hpp>
