#pragma once
/// \file The HIP tuners' job and table of keys over the file cache, compiled once for
/// COTUNE_SEPARATE_COMPILATION: declared `extern template` by <cotune/hip/hip.hpp>. <cotune/impl/hip_src.hpp>
/// includes it; the `cotune::cotune_separate` CMake target compiles it as an object of its own, which a
/// static link takes only into programs that name a HIP tuner.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/hip_jobs_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/cache/file_cache.hpp>
#include <cotune/hip/hip.hpp>
#include <cotune/tune/tuned_keys.hpp>
#include <cotune/tune/tuning_job.hpp>

namespace cotune {
template class tuning_job<hip::hip_backend, hip::hip_benchmarker, file_cache>;
template class detail::tuned_keys<hip::hip_backend, hip::hip_benchmarker, file_cache>;
} // namespace cotune
