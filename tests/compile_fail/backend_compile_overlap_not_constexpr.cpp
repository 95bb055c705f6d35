// Must not compile: a backend that declares benchmark_overlaps_compile, but not as a constant (the
// autotuner would otherwise fall back to overlapping and skew CPU timings with compiles).
// expect: benchmark_overlaps_compile must be `static constexpr bool`
#include <cotune/defaults.hpp>

struct overlapping_backend : cotune::host_backend {
#ifdef COTUNE_CONTROL
  static constexpr bool benchmark_overlaps_compile = true;
#else
  static inline bool benchmark_overlaps_compile = true;
#endif
};

static_assert(sizeof(cotune::autotuner<void(int*, int), overlapping_backend>) > 0);
