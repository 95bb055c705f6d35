// Linked into every benchmark: a build without optimisation (the dev preset compiles the benchmarks at
// -O0, to check that they build and cost CI little) says so before any figure. Figures come from the
// bench preset (`cmake --workflow --preset bench`, -O2), or the GPU figures' RelWithDebInfo build.

#include <cstdio>

namespace {
#ifndef __OPTIMIZE__
[[maybe_unused]] const int warned = std::fputs(
    "warning: this benchmark was built without optimisation (COTUNE_PROGRAM_COMPILE_OPTIONS): its figures "
    "are not representative; build it with `cmake --workflow --preset bench` (RESULTS.md)\n",
    stderr);
#endif
} // namespace
