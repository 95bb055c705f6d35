#pragma once
// A combination that cotune does not compile once (the host tuner over a cache of the program's own),
// compiled once by the program itself with cotune's macros: declared here, instantiated in
// separate_own_job.cpp, used by separate_compilation.cpp.
#include <string_view>

#include <cotune/cotune.hpp>
#include <cotune/tune/job_instantiation.hpp>

namespace separate_test {
/// The file cache, counting how often a tuner opens it (so the test sees that this cache was used).
struct counting_cache : cotune::file_cache {
  static inline int opened = 0;
  explicit counting_cache(std::string_view key) : file_cache(key) { ++opened; }
};
} // namespace separate_test

COTUNE_EXTERN_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, separate_test::counting_cache);
