// 01: compile one CPU kernel in several configurations with the host backend (binaries kept in the
// binary cache) and time each one with the host benchmarker. (Example 02 lets the autotuner do all of this.)
#include <cstdio>
#include <vector>

#include <cotune/cotune.hpp>

static const char* kernel_code = R"(
// Sums a vector in chunks of UNROLL independent accumulators.
extern "C" void sum(const float* x, int n, float* out) {
  float acc[UNROLL] = {};
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) acc[u] += x[i + u];
  float total = 0;
  for (; i < n; ++i) total += x[i];
  for (int u = 0; u < UNROLL; ++u) total += acc[u];
  *out = total;
}
)";

int main() {
  cotune::host_backend backend;
  cotune::binary_cache<cotune::host_backend> binaries(backend);
  cotune::host_benchmarker bench;
  cotune::kernel_source kernel{.name = "sum", .code = kernel_code, .entry = "sum", .options = {"-fno-fast-math"}};
  std::vector<float> x(1 << 20, 1.0f);
  int n = static_cast<int>(x.size());
  float out = 0;
  const float* xp = x.data();
  float* outp = &out;
  for (int unroll : {1, 2, 4, 8, 16}) {
    cotune::config cfg{{"UNROLL", unroll}};
    auto bin = binaries.get_or_compile(kernel, cfg, {});
    auto fn = binaries.load(bin, kernel, cfg, {});
    auto t = bench.bench([&] { backend.launch(fn, {}, xp, n, outp); },
                         {.warmup_ms = 5, .rep_ms = 20, .quantiles = {0.5, 0.2, 0.8}});
    std::printf("%-60s median %.4f ms (p20 %.4f, p80 %.4f) sum=%.0f%s\n", cfg.text().c_str(), t[0], t[1], t[2],
                out, bin.from_cache ? "  [binary from cache]" : "");
    if (out != static_cast<float>(n)) return 1;
  }
}
