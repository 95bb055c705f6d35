// Compiled candidates (docs/compiled-kernels.md) against the alternatives, on example 10's space (a
// reduction, 24 nvcc instantiations over BLOCK x ITEMS x SHUFFLE):
//
// 1. host time per call of the winner, in batches, four ways in rotating order within each round: the
//    raw `sum<...><<<grid, block, 0, stream>>>` launch (the baseline), cuLaunchKernel of the same
//    function with prepared parameters, the tuned call on the caller's stream
//    `tuner.on(stream)(x, total, n)` and the tuned call `tuner(x, total, n)`; the stream is drained
//    between batches. Target: the tuned call at most 1.03x the raw launch.
// 2. cold tuning (an empty cache) of the 24 compiled candidates against the same 24 configs compiled
//    through NVRTC from the same file (examples/10_compiled_kernels.cu, which NVRTC compiles without its
//    table), and the warm start of each (a new tuner over the filled cache: the result is read).
//
//   bench_cuda_compiled [rounds] [batch]      defaults: 200 rounds of 256 launches
//
// Prints a table with ratios and one line `FIGURE {json}`. Run from the repository root (it reads
// examples/10_compiled_kernels.cu) or set COTUNE_SOURCE_DIR.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda_runtime_api.h>

#include <cotune/bench/summary.hpp>

// Example 10's tuner, options and kernels' declaration, without its main().
#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/10_compiled_kernels.cpp"

#include "cuda_device.hpp"

namespace bench_compiled {
using raw_launch = void (*)(unsigned grid, cudaStream_t stream, const int* x, unsigned long long* total, int n);
std::vector<raw_launch> raw_launches(); // bench_cuda_compiled.cu
} // namespace bench_compiled

namespace {

using clock_type = std::chrono::steady_clock;
using nvrtc_tuner = cotune::autotuner<void(cuda::device_span<const int>, cuda::device_span<unsigned long long>, int),
                                      cuda::cuda_backend>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return cotune::quantile_of_sorted(v, 0.5);
}

std::string example_source() {
  const char* root = std::getenv("COTUNE_SOURCE_DIR");
  const std::filesystem::path file = std::filesystem::path(root ? root : ".") / "examples/10_compiled_kernels.cu";
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "bench_cuda_compiled: cannot read %s (run from the repository root)\n", file.c_str());
    std::exit(1);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

} // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 256;
  const auto first = cotune_bench::first_cuda_device("bench_cuda_compiled");
  if (!first) return 0;
  const cuda::device& d = *first;
  const int n = 1 << 20;
  std::vector<int> hx(static_cast<std::size_t>(n));
  unsigned long long expected = 0;
  for (int i = 0; i < n; ++i) expected += static_cast<unsigned long long>(hx[std::size_t(i)] = i % 1000);
  cuda::device_buffer<int> dx(d, hx);
  cuda::device_buffer<unsigned long long> dtotal(d, 1);
  const cuda::device_span<const int> x = dx;
  const cuda::device_span<unsigned long long> total = dtotal;

  // --- 2. cold tuning and warm start, compiled and through NVRTC, each in a cache of its own ----------
  const auto scratch = std::filesystem::temp_directory_path() / ("cotune-bench-compiled-" + std::to_string(::getpid()));
  const example10::sum_backend backend{example10::sum_kernels()};
  const auto configs = backend.configs();
  double compiled_cold = 0, compiled_warm = 0, nvrtc_cold = 0, nvrtc_warm = 0;
  cotune::config best;
  {
    auto dir = cotune::knobs().cache.dir.scoped((scratch / "compiled").string());
    auto t0 = clock_type::now();
    example10::sum_tuner cold{backend.source("bench_sum"), configs, example10::sum_options(), backend};
    best = cold.tune_now(x, total, n).best();
    compiled_cold = seconds_since(t0);
    t0 = clock_type::now();
    example10::sum_tuner warm{backend.source("bench_sum"), configs, example10::sum_options(), backend};
    (void)warm.tune_now(x, total, n);
    compiled_warm = seconds_since(t0);
    if (warm.cached_tunings() != 1) std::fprintf(stderr, "bench_cuda_compiled: the warm start measured again\n");
  }
  {
    auto dir = cotune::knobs().cache.dir.scoped((scratch / "nvrtc").string());
    const cotune::kernel_source source{.name = "bench_sum_nvrtc",
                                       .code = example_source(),
                                       .entry = "example10::sum<BLOCK, ITEMS, SHUFFLE>"};
    auto t0 = clock_type::now();
    nvrtc_tuner cold{source, configs, example10::sum_options()};
    (void)cold.tune_now(x, total, n);
    nvrtc_cold = seconds_since(t0);
    t0 = clock_type::now();
    nvrtc_tuner warm{source, configs, example10::sum_options()};
    (void)warm.tune_now(x, total, n);
    nvrtc_warm = seconds_since(t0);
  }
  std::filesystem::remove_all(scratch);

  // --- 1. host time per call of the winner -------------------------------------------------------------
  auto no_cache = cotune::knobs().autotuning.cache.scoped(false);
  example10::sum_tuner tuner{backend.source("bench_sum_calls"), configs, example10::sum_options(), backend};
  (void)tuner.tune_now(x, total, n);
  const std::size_t winner = static_cast<std::size_t>(std::find(configs.begin(), configs.end(), best) - configs.begin());
  const auto raw = bench_compiled::raw_launches();
  if (raw.size() != configs.size() || winner >= configs.size()) {
    std::fprintf(stderr, "bench_cuda_compiled: the raw launchers do not match example 10's table\n");
    return 1;
  }
  const cuda::device_context& ctx = cuda::driver().context(d.ordinal);
  const CUstream stream = ctx.stream();
  const auto fn = backend.load(backend.compile(backend.source("bench_sum_calls"), best, d), backend.source("bench_sum_calls"),
                               best, d);
  const cotune::launch_grid grid = cotune::grid(best, cdiv(n, cotune::p("BLOCK") * cotune::p("ITEMS")));
  CUdeviceptr px = x.data(), pt = total.data();
  int nn = n;
  void* params[] = {&px, &pt, &nn};
  const auto launch_kernel = ctx.api().launch_kernel;
  const auto* hx_ptr = reinterpret_cast<const int*>(px);
  auto* ht_ptr = reinterpret_cast<unsigned long long*>(pt);

  // Correctness of each way before timing it: one launch on a zeroed total.
  struct way {
    const char* name;
    std::function<void()> once;
    std::vector<double> us{};
  };
  std::vector<way> ways{
      {"raw kernel<<<>>>", [&] { raw[winner](grid.x, stream, hx_ptr, ht_ptr, n); }},
      {"cuLaunchKernel", [&] { (void)launch_kernel(fn.handle, grid.x, 1, 1, fn.threads_per_block, 1, 1, 0, stream, params, nullptr); }},
      {"tuner.on(stream)(args...)", [&] { tuner.on(stream)(x, total, n); }},
      {"tuner(args...)", [&] { tuner(x, total, n); }}};
  for (auto& w : ways) {
    dtotal.zero();
    backend.synchronize(d);
    w.once();
    backend.synchronize(d);
    if (dtotal.to_vector().front() != expected) {
      std::fprintf(stderr, "bench_cuda_compiled: %s computed a wrong sum\n", w.name);
      return 1;
    }
  }
  for (int r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < ways.size(); ++k) {
      auto& w = ways[(k + std::size_t(r)) % ways.size()];
      const auto t0 = clock_type::now();
      for (int i = 0; i < batch; ++i) w.once();
      const auto t1 = clock_type::now();
      backend.synchronize(d);
      w.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    }

  std::printf("%s\n", cuda::availability().text().c_str());
  std::printf("compiled candidates on %s: example 10's sum over %d ints, %zu candidates, winner {%s}\n",
              backend.device_name(d).c_str(), n, configs.size(), best.text().c_str());
  std::printf("host time per call (%d rounds of %d):\n  %-28s %10s %8s\n", rounds, batch, "way", "median us", "vs raw");
  const double raw_us = median(ways[0].us);
  for (const auto& w : ways) std::printf("  %-28s %10.3f %7.3fx\n", w.name, median(w.us), median(w.us) / raw_us);
  std::printf("tuning the %zu configs:\n  %-28s %10s %10s\n", configs.size(), "", "cold s", "warm s");
  std::printf("  %-28s %10.3f %10.4f\n", "compiled (nvcc)", compiled_cold, compiled_warm);
  std::printf("  %-28s %10.3f %10.4f\n", "NVRTC at run time", nvrtc_cold, nvrtc_warm);
  std::printf("  cold: NVRTC / compiled = %.2fx (%.3f s of compiling saved); warm: NVRTC / compiled = %.2fx\n",
              nvrtc_cold / compiled_cold, nvrtc_cold - compiled_cold, nvrtc_warm / compiled_warm);
  std::printf("FIGURE {\"figure\": \"compiled_candidates\", \"configs\": %zu, \"raw_us\": %.4f, \"cu_launch_us\": %.4f, "
              "\"tuned_on_stream_us\": %.4f, \"tuned_us\": %.4f, \"tuned_on_stream_over_raw\": %.4f, "
              "\"tuned_over_raw\": %.4f, \"compiled_cold_s\": %.3f, \"nvrtc_cold_s\": %.3f, \"compiled_warm_s\": %.4f, "
              "\"nvrtc_warm_s\": %.4f}\n",
              configs.size(), raw_us, median(ways[1].us), median(ways[2].us), median(ways[3].us),
              median(ways[2].us) / raw_us, median(ways[3].us) / raw_us, compiled_cold, nvrtc_cold, compiled_warm,
              nvrtc_warm);
  return 0;
}
