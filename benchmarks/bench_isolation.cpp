// Isolation figures (issue 10 item 4): what a forked, isolated benchmark costs.
//   1. respawn: run_isolated of a trivial function, 300 times: p50 and p99 of the fork and of the whole
//      round trip (fork, run, report, reap);
//   2. the CPU demo (example 02's 17-candidate matmul, n = 256, binaries cached, results not cached):
//      tuning wall time with COTUNE_ISOLATE=off against on, `runs` pairs, the order within a pair
//      alternating (off first, then on first) so that drift cancels; the medians, their ratio and the
//      median of the pairs' ratios (a run's time is set mostly by how many finalists its screening
//      keeps, 2 or 4, which no mode controls: pairs and many of them are what make the ratio a figure);
//   2b. a 1,000-config host space: tuning wall time off against on, cold and with the binaries cached
//      (`space_runs` pairs, alternating likewise);
//   3. configs lost per fault: a 6-candidate list with one segfaulting candidate, isolated: how many
//      candidates failed (target exactly 1).
// Usage: bench_isolation [runs=5] [space_runs=runs/2] [only=space|cold]
//   only=space: just 2b's pairs with the binaries cached (where the per-candidate round trip weighs most);
//   only=cold: just 2b's cold tunings, space_runs pairs of them (each about 25 s on the 2-core VM).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/isolated_run.hpp>

#include "../examples/cpu_matmul.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

/// Runs `a` and `b` once each, in the order given by `i` (even: a first), and returns their times.
template <class A, class B>
std::pair<double, double> alternating_pair(int i, A&& a, B&& b) {
  if (i % 2 == 0) {
    const double ta = a();
    return {ta, b()};
  }
  const double tb = b();
  return {a(), tb};
}

double pair_ratio_median(const std::vector<double>& off, const std::vector<double>& on) {
  std::vector<double> r;
  for (std::size_t i = 0; i < off.size(); ++i) r.push_back(on[i] / off[i]);
  return quantile(r, 0.5);
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool space_only = argc > 3 && std::string(argv[3]) == "space";
  const bool cold_only = argc > 3 && std::string(argv[3]) == "cold";
  const int space_runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : std::max(1, runs / 2);
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // each figure as it comes, also into a file
  // 1. respawn cost
  std::vector<double> fork_ms, round_ms;
  for (int i = 0; i < (space_only || cold_only ? 0 : 300); ++i) {
    const auto t0 = clock_type::now();
    auto r = cotune::detail::run_isolated([] { return std::vector<double>{1.0, 2.0, 3.0}; }, std::chrono::seconds(10));
    round_ms.push_back(ms_since(t0));
    fork_ms.push_back(r.fork_ms);
  }
  if (!space_only && !cold_only)
    std::printf("respawn: fork p50 %.3f ms p99 %.3f ms; round trip p50 %.3f ms p99 %.3f ms (300 runs)\n",
              quantile(fork_ms, 0.5), quantile(fork_ms, 0.99), quantile(round_ms, 0.5), quantile(round_ms, 0.99));

  if (!space_only && !cold_only) {
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
      const auto [t_off, t_on] = alternating_pair(i, [&] { return tune_once("off"); }, [&] { return tune_once("on"); });
      off.push_back(t_off);
      on.push_back(t_on);
    }
    const double off_ms = quantile(off, 0.5), on_ms = quantile(on, 0.5), demo_pairs = pair_ratio_median(off, on);
    std::printf("CPU demo (17 candidates, n=%d): isolation off %.1f ms, on %.1f ms (medians of %d); on/off = %.3f; "
                "median of the %d pairs' ratios %.3f\n",
                n, off_ms, on_ms, runs, on_ms / off_ms, runs, demo_pairs);

    std::printf("FIGURE {\"figure\": \"isolation_cost_cpu_demo\", \"off_ms\": %.1f, \"on_ms\": %.1f, \"ratio\": %.4f, "
                "\"pair_ratio\": %.4f, \"pairs\": %d}\n",
                off_ms, on_ms, on_ms / off_ms, demo_pairs, runs);
  }

  // 2b. a 1,000-config host space (10 x 10 x 10), isolation off against on: once cold (every candidate
  // compiled: new kernel names), then with the binaries cached, where the forks weigh most.
  const std::string space_code = "extern \"C\" void spin(int* out, int n) {\n"
                                 "  volatile int s = 0;\n"
                                 "  for (int i = 0; i < n * (1 + (A + 2 * B + 3 * C) % 7); ++i) s += i;\n"
                                 "  out[0] = s;\n}\n";
  std::vector<cotune::config> space;
  for (int x = 0; x < 10; ++x)
    for (int y = 0; y < 10; ++y)
      for (int z = 0; z < 10; ++z) space.push_back(cotune::config{{"A", x}, {"B", y}, {"C", z}});
  int spin_out = 0;
  auto tune_space = [&](const char* mode, const std::string& name) {
    auto isolate = cotune::knobs().autotuning.isolate.scoped(mode);
    cotune::autotuner<void(int*, int)> tuner{cotune::kernel_source{.name = name, .code = space_code, .entry = "spin"},
                                             space, {.arg_names = {"out", "n"}, .key = {"n"}}};
    const auto t0 = clock_type::now();
    (void)tuner.tune_now(&spin_out, 2000);
    return ms_since(t0);
  };
  double cold_off = 0, cold_on = 0;
  if (!space_only) {
    // Cold: new kernel names in every run, so that no binary of an earlier run can serve. One pair, or with
    // only=cold space_runs pairs, the order alternating.
    const std::string run_tag = std::to_string(::getpid());
    std::vector<double> off, on;
    for (int i = 0; i < (cold_only ? space_runs : 1); ++i) {
      const std::string tag = run_tag + "_" + std::to_string(i);
      const auto [t_off, t_on] =
          alternating_pair(i, [&] { return tune_space("off", "bench_isolation_space_cold_off_" + tag); },
                           [&] { return tune_space("on", "bench_isolation_space_cold_on_" + tag); });
      off.push_back(t_off);
      on.push_back(t_on);
      std::printf("  cold pair %d: off %.0f ms, on %.0f ms, on/off %.3f\n", i + 1, t_off, t_on, t_on / t_off);
    }
    cold_off = quantile(off, 0.5);
    cold_on = quantile(on, 0.5);
    std::printf("1000-config host space, cold: isolation off %.0f ms, on %.0f ms (medians of %zu); on/off = %.3f; "
                "median of the pairs' ratios %.3f\n",
                cold_off, cold_on, off.size(), cold_on / cold_off, pair_ratio_median(off, on));
    if (cold_only) return 0;
  }
  (void)tune_space("off", "bench_isolation_space_warm"); // compiles: the pairs below all find the binaries
  std::vector<double> space_off, space_on;
  for (int i = 0; i < space_runs; ++i) {
    const auto [t_off, t_on] =
        alternating_pair(i, [&] { return tune_space("off", "bench_isolation_space_warm"); },
                         [&] { return tune_space("on", "bench_isolation_space_warm"); });
    space_off.push_back(t_off);
    space_on.push_back(t_on);
  }
  const double warm_off = quantile(space_off, 0.5), warm_on = quantile(space_on, 0.5);
  const double space_pairs = pair_ratio_median(space_off, space_on);
  std::printf("1000-config host space, binaries cached: isolation off %.0f ms, on %.0f ms (medians of %d); on/off = "
              "%.3f; median of the pairs' ratios %.3f\n",
              warm_off, warm_on, space_runs, warm_on / warm_off, space_pairs);
  std::printf("  each pair (off ms, on ms, on/off):");
  for (std::size_t i = 0; i < space_off.size(); ++i)
    std::printf(" (%.0f, %.0f, %.3f)", space_off[i], space_on[i], space_on[i] / space_off[i]);
  std::printf("\n");
  std::printf("FIGURE {\"figure\": \"isolation_cost_host_1000\", \"cold_off_ms\": %.0f, \"cold_on_ms\": %.0f, "
              "\"cold_ratio\": %.4f, \"warm_off_ms\": %.0f, \"warm_on_ms\": %.0f, \"warm_ratio\": %.4f, "
              "\"warm_pair_ratio\": %.4f, \"pairs\": %d}\n",
              cold_off, cold_on, cold_on / cold_off, warm_off, warm_on, warm_on / warm_off, space_pairs, space_runs);

  if (space_only) return 0;

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
