// 03: tune a CUDA vector kernel. out = x + y over 16M floats, with the block size (elements per block)
// and the number of warps as parameters. The autotuner compiles every candidate with NVRTC on a
// thread pool, times each one with CUDA events on the GPU as soon as it is compiled, prints the
// table and the winner, then launches the winner and checks its output against the CPU.
// Run it twice: the second run reads the result and the winner's cubin from the disk cache and
// compiles nothing. Without a GPU it says so and exits 0.
#include <cstdio>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>

namespace cuda = cotune::cuda;

namespace example03 {

// Each block adds BLOCK elements with COTUNE_THREADS_PER_BLOCK threads (num_warps x 32; the backend
// defines it), so a thread handles BLOCK / threads elements, one per stride.
inline const char* vector_add_code = R"(
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK)
vector_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, int n) {
  const long long base = (long long)blockIdx.x * BLOCK;
#pragma unroll 4
  for (int k = threadIdx.x; k < BLOCK; k += COTUNE_THREADS_PER_BLOCK) {
    const long long i = base + k;
    if (i < n) out[i] = x[i] + y[i];
  }
}
)";

/// The kernel, optionally under another name (a unique name defeats every cache, for benchmarks).
inline cotune::kernel_source vector_add_kernel(const std::string& name = "vector_add") {
  std::string code = vector_add_code;
  code.replace(code.find("vector_add("), 10, name);
  return {.name = name, .code = code, .entry = name};
}

/// 8 candidates: 1K to 8K elements per block, 4 or 8 warps.
inline std::vector<cotune::config> vector_add_configs() {
  return cotune::config_space{}.axis("BLOCK", {1024, 2048, 4096, 8192}).num_warps({4, 8}).build();
}

using vector_add_signature =
    void(cuda::device_span<const float>, cuda::device_span<const float>, cuda::device_span<float>, int);
using vector_add_tuner = cotune::autotuner<vector_add_signature, cuda::cuda_backend>;

/// Names, the key (n; `out` adds its element type), and the grid: one block per BLOCK elements. A
/// hook's parameters need not repeat the argument types: `auto` for those it ignores.
inline vector_add_tuner::options vector_add_options() {
  return {.arg_names = {"x", "y", "out", "n"},
          .key = {"n"},
          .grid = [](const cotune::config& c, const auto&, const auto&, const auto&, const int& n) {
            return cotune::grid(c, cdiv(n, cotune::p("BLOCK")));
          },
          .cache_results = true};
}

} // namespace example03

#ifndef COTUNE_EXAMPLE_NO_MAIN
int main() {
  using namespace example03;
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("no CUDA device: skipping (%s)\n", cuda::availability().message.c_str());
    return 0;
  }
  const cuda::device& d = devices.front();
  constexpr int n = 1 << 24;

  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    // Small integers: every sum is exact, so the check can be exact.
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 1024);
    y[static_cast<std::size_t>(i)] = static_cast<float>(3 * (i % 77));
    expected[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)];
  }
  cuda::device_buffer<float> dx(d, x), dy(d, y), dout(d, static_cast<std::size_t>(n));

  vector_add_tuner tuner{vector_add_kernel(), vector_add_configs(), vector_add_options()};
  std::printf("cotune example 03: tuning out = x + y over %d floats, %zu candidates, on %s (cache: %s)\n", n,
              tuner.configs().size(), tuner.backend().device_name(d).c_str(), cotune::knobs().cache.dir.get().c_str());
  const auto& result = tuner.tune_now(dx, dy, dout, n);
  if (result.from_cache)
    std::printf("tuning result from the disk cache (measured on %s at %s); NVRTC compilations: %llu\n",
                result.made.device.c_str(), result.made.date.c_str(),
                static_cast<unsigned long long>(cuda::nvrtc().compilations()));
  else
    std::printf("tuned in %.3f s; NVRTC compilations: %llu\n", result.wall_ms / 1000.0,
                static_cast<unsigned long long>(cuda::nvrtc().compilations()));
  cotune::printing_observer::print_table(stdout, result);

  dout.zero();
  tuner(dx, dy, dout, n); // the tuned call: a table lookup and a launch
  const auto got = dout.to_vector();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != expected[i];
  const double ms = result.candidates[result.winner].time[0];
  std::printf("best config: {%s}", result.shown(result.best()).c_str());
  if (ms > 0) std::printf(", %.1f GB/s", 3.0 * n * sizeof(float) / (ms * 1e6));
  std::printf("\ntuned kernel output vs CPU reference: %zu of %d elements differ -> %s\n", wrong, n,
              wrong == 0 ? "OK" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
#endif
