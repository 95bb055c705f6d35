// 02: tune a real CPU kernel. A cache-blocked matrix multiply has 17 candidate configurations (tile
// sizes and loop order) whose speeds differ by more than 2x; the autotuner compiles them concurrently,
// measures each, prints the table and the winner, then runs the tuned kernel and checks its output.
// Run it twice: the second run reads the result from the disk cache and compiles only the winner.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <cotune/cotune.hpp>

static const char* matmul_code = R"(
// C = A * B for n x n row-major matrices.
// ORDER 0: the textbook i-j-k loop (strided reads of B, no vectorisation).
// ORDER 1: i-k-j loops over BLOCK_I x BLOCK_K x BLOCK_J tiles (unit-stride, vectorisable inner loop).
static inline int min_int(int a, int b) { return a < b ? a : b; }

extern "C" void matmul(const float* __restrict A, const float* __restrict B, float* __restrict C, int n) {
#if ORDER == 0
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc += A[i * n + k] * B[k * n + j];
      C[i * n + j] = acc;
    }
#else
  for (int i = 0; i < n * n; ++i) C[i] = 0;
  for (int i0 = 0; i0 < n; i0 += BLOCK_I)
    for (int k0 = 0; k0 < n; k0 += BLOCK_K)
      for (int j0 = 0; j0 < n; j0 += BLOCK_J)
        for (int i = i0; i < min_int(i0 + BLOCK_I, n); ++i)
          for (int k = k0; k < min_int(k0 + BLOCK_K, n); ++k) {
            const float a = A[i * n + k];
            for (int j = j0; j < min_int(j0 + BLOCK_J, n); ++j) C[i * n + j] += a * B[k * n + j];
          }
#endif
}
)";

int main() {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  constexpr int n = 256;

  cotune::kernel_source kernel{.name = "matmul", .code = matmul_code, .entry = "matmul", .options = {"-std=c++17"}};
  auto configs = cotune::config_space{}
                     .axis("ORDER", {0, 1})
                     .axis("BLOCK_I", {16, 64})
                     .axis("BLOCK_J", {64, 256})
                     .axis("BLOCK_K", {8, 32, 128, 512})
                     .where([](const cotune::config& c) {
                       // The textbook order ignores the tiles: keep one of its configs.
                       return c.at("ORDER").as_int() == 1 ||
                              (c.at("BLOCK_I").as_int() == 16 && c.at("BLOCK_J").as_int() == 64 &&
                               c.at("BLOCK_K").as_int() == 8);
                     })
                     .build();

  using signature = void(cotune::host_span<const float>, cotune::host_span<const float>, cotune::host_span<float>, int);
  cotune::autotuner<signature> tuner{kernel, configs,
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
  }
  cotune::printing_observer::print_table(stdout, result);

  tuner(a, b, c, n); // the tuned call: a table lookup and a launch
  double max_err = 0;
  for (int i = 0; i < n * n; ++i) max_err = std::max(max_err, double(std::fabs(c[i] - expected[i])));
  double worst = 0, best = result.candidates[result.winner].time[0];
  for (const auto& cand : result.candidates)
    if (cand.status == cotune::candidate_status::ok) worst = std::max(worst, cand.time[0]);
  std::printf("best config: {%s}\n", result.best().text().c_str());
  if (!result.from_cache) std::printf("slowest/fastest median: %.1fx\n", worst / best);
  std::printf("tuned kernel output vs reference: max abs error %.2e -> %s\n", max_err, max_err < 1e-3 ? "OK" : "WRONG");
  std::printf("total %.2f s\n", std::chrono::duration<double>(clock::now() - t0).count());
  return max_err < 1e-3 ? 0 : 1;
}
