// 02: tune a real CPU kernel. A cache-blocked matrix multiply has 17 candidate configurations (tile
// sizes and loop order) whose speeds differ by more than 2x; the autotuner compiles them concurrently,
// screens each, measures the finalists again, prints the table and the winner, then runs the tuned kernel
// and checks its output. Run it twice: the second run reads the result from the disk cache and compiles
// only the winner (and, as Triton does, prints no table for a result it did not measure).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <cotune/cotune.hpp>

#include "cpu_matmul.hpp"


int main() {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  constexpr int n = 256;

  cotune::kernel_source kernel{.name = "matmul", .code = cpu_matmul::matmul_code, .entry = "matmul", .options = {"-std=c++17"}};
  auto configs = cpu_matmul::configs();

  cotune::autotuner<cpu_matmul::signature> tuner{kernel, configs,
                                     {.arg_names = {"A", "B", "C", "n"}, .key = {"n"}, .cache_results = true}};

  std::vector<float> a(n * n), b(n * n), c(n * n), expected(n * n, 0.0f);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) expected[i * n + j] += a[i * n + k] * b[k * n + j];

  std::printf("cotune demo: tuning a %dx%d matmul over %zu candidates on the CPU (cache: %s)\n", n, n, configs.size(),
              cotune::knobs().cache.dir.get().c_str());
  const auto& result = tuner.tune_now(a, b, c, n);
  if (result.from_cache) {
    std::printf("tuning result served from the disk cache (measured on %s at %s); compiled only the winner\n",
                result.made.host.c_str(), result.made.date.c_str());
  } else {
    std::printf("tuned in %.2f s: %zu compiles on %zu threads\n", result.wall_ms / 1000.0, tuner.compiles(),
                cotune::engine::shared().compile_threads());
    cotune::printing_observer::print_table(stdout, result);
  }

  tuner(a, b, c, n); // the tuned call: a table lookup and a launch
  double max_err = 0;
  for (int i = 0; i < n * n; ++i) max_err = std::max(max_err, double(std::fabs(c[i] - expected[i])));
  // The screening medians compare across candidates (a finalist's final time comes from another pass).
  auto screened = [](const cotune::candidate_result& c) { return std::isfinite(c.screen_ms) ? c.screen_ms : c.time[0]; };
  double worst = 0, best = screened(result.candidates[result.winner]);
  for (const auto& cand : result.candidates)
    if (cand.status == cotune::candidate_status::ok) {
      worst = std::max(worst, screened(cand));
      best = std::min(best, screened(cand));
    }
  std::printf("best config: {%s}\n", result.shown(result.best()).c_str());
  if (!result.from_cache) std::printf("slowest/fastest screening median: %.1fx\n", worst / best);
  std::printf("tuned kernel output vs reference: max abs error %.2e -> %s\n", max_err, max_err < 1e-3 ? "OK" : "WRONG");
  std::printf("total %.2f s\n", std::chrono::duration<double>(clock::now() - t0).count());
  return max_err < 1e-3 ? 0 : 1;
}
