#pragma once
/// \file Compiling a tuner's job once: the explicit instantiations of a backend, benchmarker and cache
/// combination's `tuning_job`, table of keys and core, the bulk of a tuner's code and the same for every kernel
/// signature. cotune uses them for the combinations it compiles once in separate mode (the host tuner in
/// <cotune/defaults.hpp>, the CUDA and HIP tuners over the file cache); a program does the same for its
/// own combination (another cache, such as Redis's, or a backend of its own), in either mode:
///
///     // in a header every file that names the tuner includes:
///     COTUNE_EXTERN_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, my_cache);
///     // in exactly one file of the program:
///     COTUNE_INSTANTIATE_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, my_cache);
///
/// Both are used at global scope (not inside a namespace of the program: C++ wants an explicit
/// instantiation in a namespace that encloses the template's), after the three types are complete. A
/// missing COTUNE_INSTANTIATE_TUNING_JOB shows as undefined `cotune::tuning_job<...>` symbols at link time.
/// Since 2026-12-05 the macros cover the combination's `cotune::tuning_core` too: a program that wrote its
/// own `template class cotune::tuning_core<...>;` beside COTUNE_INSTANTIATE_TUNING_JOB drops that line
/// (g++ refuses a second explicit instantiation of it in one file).

#include <cotune/tune/detail/tuned_keys.hpp>
#include <cotune/tune/detail/tuning_job.hpp>

/// Declares the combination's job compiled elsewhere: files that see this do not compile it.
#define COTUNE_EXTERN_TUNING_JOB(...)                                                                       \
  extern template class ::cotune::tuning_job<__VA_ARGS__>;                                                 \
  extern template class ::cotune::detail::tuned_keys<__VA_ARGS__>;                                         \
  extern template class ::cotune::tuning_core<__VA_ARGS__>

/// Compiles the combination's job in this file (once per program).
#define COTUNE_INSTANTIATE_TUNING_JOB(...)                                                                  \
  template class ::cotune::tuning_job<__VA_ARGS__>;                                                        \
  template class ::cotune::detail::tuned_keys<__VA_ARGS__>;                                                \
  template class ::cotune::tuning_core<__VA_ARGS__>
