#pragma once
// Shared pieces of the autotuner tests: a private cache directory and small real CPU kernels.

#include <filesystem>
#include <string>

#include <unistd.h>

#include <cotune/cotune.hpp>

namespace cotune_test {

/// A fresh cache directory for one test, selected through the cache.dir knob and removed afterwards.
struct private_cache {
  std::filesystem::path dir;
  cotune::knob<std::string>::scope scope;
  private_cache()
      : dir(make()), scope(cotune::knobs().cache.dir, dir.string()) {}
  ~private_cache() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::filesystem::path make() {
    char tmpl[] = "/tmp/cotune-test-XXXXXX";
    return ::mkdtemp(tmpl);
  }
};

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

/// Small budgets: tests check choices, never timings.
inline cotune::bench_options quick_bench() { return {.warmup_ms = 1.0, .rep_ms = 5.0}; }

} // namespace cotune_test
