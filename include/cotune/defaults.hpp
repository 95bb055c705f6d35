#pragma once
/// \file What `cotune::autotuner<Signature>` means when it names no backend: the host backend (the
/// system C++ compiler, timed by the host clock, binaries and results in the file cache).
///
/// <cotune/tune/autotuner.hpp> names no concrete backend; this header adds the default, and
/// <cotune/cotune.hpp> includes it. Without it, `autotuner<Signature>` does not compile (it never
/// silently means something else).

#include <cotune/backend/host_backend.hpp>
#include <cotune/tune/autotuner.hpp>

namespace cotune {

template <class Signature, Backend B = host_backend, class Bench, CacheManager Cache>
class autotuner;

} // namespace cotune
