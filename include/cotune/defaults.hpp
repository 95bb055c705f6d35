#pragma once
/// \file What `cotune::autotuner<Signature>` means when it names no backend: the host backend (the
/// system C++ compiler, timed by the host clock, binaries and results in the file cache).
///
/// <cotune/tune/autotuner.hpp> names no concrete backend; this header adds the default, and
/// <cotune/cotune.hpp> includes it. Without it, `autotuner<Signature>` does not compile (it never
/// silently means something else).

#include <cotune/backend/host_backend.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/job_instantiation.hpp>

namespace cotune {

template <class Signature, Backend B = host_backend, class Bench, CacheManager Cache>
class autotuner;

} // namespace cotune

#if !COTUNE_HEADER_ONLY
// COTUNE_SEPARATE_COMPILATION: the default tuner's tuning job, table of keys and core (the bulk of a
// tuner's code, and the same for every kernel signature) are compiled once, in <cotune/impl/src.hpp>.
COTUNE_EXTERN_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, cotune::file_cache);
#endif
