#pragma once
// Shared pieces of the autotuner tests: small real CPU kernels (private caches: ../support/temp_dir.hpp).

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
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

/// The busy work, or a crash chosen by CRASH: 1 dereferences null, 2 aborts, 3 loops forever, 4 calls
/// exit(3).
inline const char* crashing_code = R"(
#include <cstdlib>
extern "C" void work(int* out, int n) {
  if (CRASH == 1) { volatile int* p = nullptr; *p = 1; }
  if (CRASH == 2) std::abort();
  if (CRASH == 3) { volatile int spin = 1; while (spin) {} }
  if (CRASH == 4) std::exit(3);
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

/// The host backend without module globals, as any backend that cannot find them.
struct no_globals_backend {
  using device = cotune::host_backend::device;
  using binary = cotune::host_backend::binary;
  using function = cotune::host_backend::function;
  cotune::host_backend inner;
  [[nodiscard]] std::vector<device> devices() const { return inner.devices(); }
  [[nodiscard]] std::string fingerprint(const device& d) const { return inner.fingerprint(d); }
  [[nodiscard]] std::string device_name(const device& d) const { return inner.device_name(d); }
  [[nodiscard]] cotune::binary_recipe binary_key(const cotune::kernel_source& k, const cotune::config& c,
                                                 const device& d) const {
    return inner.binary_key(k, c, d);
  }
  [[nodiscard]] binary compile(const cotune::kernel_source& k, const cotune::config& c, const device& d) const {
    return inner.compile(k, c, d);
  }
  [[nodiscard]] cotune::binary_image to_image(const binary& b) const { return inner.to_image(b); }
  [[nodiscard]] std::optional<binary> from_image(cotune::binary_image i) const {
    return inner.from_image(std::move(i));
  }
  [[nodiscard]] function load(const binary& b, const cotune::kernel_source& k, const cotune::config& c,
                              const device& d) const {
    return inner.load(b, k, c, d);
  }
  template <class... A>
  void launch(const function& f, const cotune::launch_grid& g, A&... a) const {
    inner.launch(f, g, a...);
  }
};
static_assert(cotune::Backend<no_globals_backend> && !cotune::FindsModuleGlobals<no_globals_backend>);

} // namespace cotune_test
