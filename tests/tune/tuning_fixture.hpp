#pragma once
// Shared pieces of the autotuner tests: small real CPU kernels (private caches: ../support/temp_dir.hpp).

#include <initializer_list>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>

#include "../support/temp_dir.hpp"

namespace cotune_test {

/// Busy work whose cost is COST x n iterations: candidates that differ by COST differ in time.
inline const char* work_code = R"(
extern "C" void work(int* out, int n) {
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";

inline cotune::kernel_source work_kernel(std::string name = "work") {
  return {.name = std::move(name), .code = work_code, .entry = "work"};
}

/// The busy work, or a crash chosen by CRASH: 1 dereferences null, 2 aborts, 3 loops forever.
inline const char* crashing_code = R"(
#include <cstdlib>
extern "C" void work(int* out, int n) {
  if (CRASH == 1) { volatile int* p = nullptr; *p = 1; }
  if (CRASH == 2) std::abort();
  if (CRASH == 3) { volatile int spin = 1; while (spin) {} }
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";

inline cotune::kernel_source crashing_kernel(std::string name) {
  return {.name = std::move(name), .code = crashing_code, .entry = "work"};
}

/// One config per COST, in order: candidates of the work kernel that differ only in their cost.
inline std::vector<cotune::config> cost_configs(std::initializer_list<int> costs) {
  std::vector<cotune::config> out;
  for (int c : costs) out.push_back(cotune::config{{"COST", c}});
  return out;
}

/// Small budgets: tests check choices, never timings.
inline cotune::bench_options quick_bench() { return {.warmup_ms = 1.0, .rep_ms = 5.0}; }

} // namespace cotune_test
