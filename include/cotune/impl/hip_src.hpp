#pragma once
/// \file The HIP module's separately compiled part, for COTUNE_SEPARATE_COMPILATION: a program that uses
/// the module and compiles <cotune/impl/src.hpp> itself (without CMake) compiles this header in one file
/// too. The `cotune::cotune_separate` CMake target holds it when the module is built (the HIP tuners' job
/// as an object of its own: src/cotune_separate_hip_jobs.cpp).

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/hip_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cotune/hip/hip_knobs.ipp>
#include <cotune/hip/availability.ipp>
#include <cotune/hip/device.ipp>
#include <cotune/hip/device_buffer.ipp>
#include <cotune/hip/hip_api.ipp>
#include <cotune/hip/hiprtc_api.ipp>
#include <cotune/hip/hip_backend.ipp>
#include <cotune/hip/compiled_backend.ipp>
#include <cotune/hip/isolation.ipp>

#include <cotune/impl/hip_jobs_src.hpp>
