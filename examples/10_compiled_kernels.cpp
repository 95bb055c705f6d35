// 10: tune kernels your build compiled. 10_compiled_kernels.cu instantiates a reduction template 24
// times (BLOCK x ITEMS x SHUFFLE) with nvcc; this program tunes those instantiations at run time, with
// no run-time compiler at all (it checks that NVRTC was never loaded), launches the winner through the
// driver API and checks the sum against the CPU. A second run reads the winner from the result cache,
// which the program's build ID keys (a rebuilt program tunes again). Without a GPU it says so and exits 0.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/cuda/compiled_backend.hpp>
#include <cotune/cuda/cuda.hpp>

namespace cuda = cotune::cuda;

namespace example10 {

/// The kernels 10_compiled_kernels.cu compiled.
cotune::cuda::compiled_kernels<void(const int*, unsigned long long*, int)> sum_kernels();

using sum_backend = cuda::compiled_backend<void(const int*, unsigned long long*, int)>;
using sum_tuner =
    cotune::autotuner<void(cuda::device_span<const int>, cuda::device_span<unsigned long long>, int), sum_backend>;

/// The key is n; the total is zeroed before every measured run; one block per BLOCK * ITEMS elements.
inline sum_tuner::options sum_options() {
  return {.arg_names = {"x", "total", "n"},
          .key = {"n"},
          .reset_to_zero = {"total"},
          .grid = [](const cotune::config& c, const auto&, const auto&, const int& n) {
            return cotune::grid(c, cdiv(n, cotune::p("BLOCK") * cotune::p("ITEMS")));
          },
          .cache_results = true};
}

/// Whether a run-time CUDA compiler (NVRTC) is mapped into this process.
inline bool nvrtc_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libnvrtc") != std::string::npos) return true;
  return false;
}

} // namespace example10

#ifndef COTUNE_EXAMPLE_NO_MAIN
int main() {
  using namespace example10;
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("skipped: no CUDA device here (%s)\n", cuda::availability().message.c_str());
    return 0;
  }
  const auto& d = devices.front();
  const int n = 1 << 24;
  std::vector<int> xs(static_cast<std::size_t>(n));
  unsigned long long expected = 0;
  for (int i = 0; i < n; ++i) {
    xs[std::size_t(i)] = i % 1000;
    expected += static_cast<unsigned long long>(xs[std::size_t(i)]);
  }
  cuda::device_buffer<int> x(d, xs);
  cuda::device_buffer<unsigned long long> total(d, 1);

  const sum_backend backend{sum_kernels()};
  std::printf("%zu compiled candidates of 'sum' in %s\n", backend.configs().size(),
              backend.fingerprint(d).c_str());
  sum_tuner tuner{backend.source("sum"), backend.configs(), sum_options(), backend};
  const auto& result = tuner.tune_now(x, total, n);
  std::printf("winner {%s}: %.4f ms (%s)\n", result.candidates[result.winner].cfg.text().c_str(),
              result.candidates[result.winner].time[0],
              tuner.cached_tunings() ? "from the result cache" : "measured now");

  total.zero();
  tuner(x, total, n);
  backend.synchronize(d);
  const unsigned long long got = total.to_vector().front();
  std::printf("sum = %llu (CPU: %llu)\n", got, expected);
  if (got != expected) {
    std::printf("FAILED: the tuned kernel's sum is wrong\n");
    return 1;
  }
  if (nvrtc_loaded()) {
    std::printf("FAILED: NVRTC was loaded, but compiled candidates need no run-time compiler\n");
    return 1;
  }
  std::printf("no run-time compiler was loaded\n");
  return 0;
}
#endif
