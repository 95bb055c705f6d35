#pragma once
/// \file The GPU layer's bodies (include/cotune/gpu/*.ipp), compiled once by impl/src.hpp with
/// COTUNE_SEPARATE_COMPILATION. The GPU layer names no runtime (CUDA and HIP each add theirs in
/// impl/cuda_src.hpp and impl/hip_src.hpp), so its bodies belong to the core library, once for both.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/gpu_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cotune/gpu/event_timing.ipp>
#include <cotune/gpu/rtc_compile.ipp>
#include <cotune/gpu/precompiled_file.ipp>
#include <cotune/gpu/runtime_library.ipp>
#include <cotune/gpu/isolation_pool.ipp>
#include <cotune/gpu/isolation_protocol.ipp>
#include <cotune/gpu/program_module.ipp>
#include <cotune/gpu/compiled_backend.ipp>
