// Isolation figures (issue 10 item 4): what a forked, isolated benchmark costs.
//   1. respawn: run_isolated of a trivial function, 300 times: p50 and p99 of the fork and of the whole
//      round trip (fork, run, report, reap);
//   2. the CPU demo (example 02's 17-candidate matmul, n = 256, binaries cached, results not cached):
//      tuning wall time with COTUNE_ISOLATE=off against on, 5 alternating runs each, medians and ratio;
//   3. configs lost per fault: a 6-candidate list with one segfaulting candidate, isolated: how many
//      candidates failed (target exactly 1).
// Usage: bench_isolation [runs]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/detail/isolated_run.hpp>

#include "../examples/cpu_matmul.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  // 1. respawn cost
  std::vector<double> fork_ms, round_ms;
  for (int i = 0; i < 300; ++i) {
    const auto t0 = clock_type::now();
    auto r = cotune::detail::run_isolated([] { return std::vector<double>{1.0, 2.0, 3.0}; }, std::chrono::seconds(10));
    round_ms.push_back(ms_since(t0));
    fork_ms.push_back(r.fork_ms);
  }
  std::printf("respawn: fork p50 %.3f ms p99 %.3f ms; round trip p50 %.3f ms p99 %.3f ms (300 runs)\n",
              quantile(fork_ms, 0.5), quantile(fork_ms, 0.99), quantile(round_ms, 0.5), quantile(round_ms, 0.99));

  // 2. the CPU demo, isolation off against on
  constexpr int n = 256;
  const cotune::kernel_source kernel{.name = "bench_isolation_matmul", .code = cpu_matmul::matmul_code,
                                     .entry = "matmul", .options = {"-std=c++17"}};
  std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n, 0.0f);
  auto tune_once = [&](const char* mode) {
    auto isolate = cotune::knobs().autotuning.isolate.scoped(mode);
    cotune::autotuner<cpu_matmul::signature> tuner{kernel, cpu_matmul::configs(),
                                                   {.arg_names = {"A", "B", "C", "n"}, .key = {"n"}}};
    const auto t0 = clock_type::now();
    (void)tuner.tune_now(a, b, c, n);
    return ms_since(t0);
  };
  (void)tune_once("off"); // compiles every candidate once: later runs are binary-cache hits
  std::vector<double> off, on;
  for (int i = 0; i < runs; ++i) {
    off.push_back(tune_once("off"));
    on.push_back(tune_once("on"));
  }
  const double off_ms = quantile(off, 0.5), on_ms = quantile(on, 0.5);
  std::printf("CPU demo (17 candidates, n=%d): isolation off %.1f ms, on %.1f ms (medians of %d); on/off = %.3f\n", n,
              off_ms, on_ms, runs, on_ms / off_ms);

  // 3. configs lost per fault
  const cotune::kernel_source crashing{.name = "bench_isolation_crash",
                                       .code = "extern \"C\" void work(int* out, int n) {\n"
                                               "  if (CRASH) { volatile int* p = nullptr; *p = 1; }\n"
                                               "  volatile int s = 0; for (int i = 0; i < n * COST; ++i) s += i;\n"
                                               "  out[0] = s;\n}\n",
                                       .entry = "work"};
  std::vector<cotune::config> configs;
  for (int i = 0; i < 6; ++i) configs.push_back(cotune::config{{"COST", 1 + i}, {"CRASH", i == 2 ? 1 : 0}});
  auto isolate = cotune::knobs().autotuning.isolate.scoped("on");
  cotune::autotuner<void(int*, int)> tuner{crashing, configs,
                                           {.arg_names = {"out", "n"}, .key = {"n"},
                                            .bench = cotune::bench_options{.warmup_ms = 1, .rep_ms = 5}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 1000);
  int lost = 0;
  for (const auto& cand : r.candidates) lost += cand.status != cotune::candidate_status::ok ? 1 : 0;
  std::printf("configs lost per fault: %d of %zu (one segfaulting candidate, isolated)\n", lost, configs.size());
  return 0;
}
