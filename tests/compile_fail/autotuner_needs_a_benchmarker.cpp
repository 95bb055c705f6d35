// Must not compile: an autotuner measuring with a type that is not a cotune::Benchmarker.
// expect: the benchmarker must satisfy cotune::Benchmarker
#include <cotune/defaults.hpp>

struct not_a_benchmarker {
  double bench() { return 0; }
};

#ifdef COTUNE_CONTROL
using bench_under_test = cotune::host_benchmarker;
#else
using bench_under_test = not_a_benchmarker;
#endif

static_assert(sizeof(cotune::autotuner<void(int), cotune::host_backend, bench_under_test>) > 0);
