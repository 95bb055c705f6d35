#pragma once
/// \file The HIP tuners' job, table of keys and core over the file cache, compiled once for
/// COTUNE_SEPARATE_COMPILATION: declared `extern template` by <cotune/hip/hip.hpp>. <cotune/impl/hip_src.hpp>
/// includes it; the `cotune::cotune_separate` CMake target compiles it as an object of its own, which a
/// static link takes only into programs that name a HIP tuner.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/hip_jobs_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file"
#endif

#include <cotune/cache/file_cache.hpp>
#include <cotune/hip/hip.hpp>
#include <cotune/tune/job_instantiation.hpp>

COTUNE_INSTANTIATE_TUNING_JOB(cotune::hip::hip_backend, cotune::hip::hip_benchmarker, cotune::file_cache);
