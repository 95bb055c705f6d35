// S1: host time per tuned call. The tuned vector kernel of example 03 is launched in batches three
// ways, in rotating order within each round: a bare cuLaunchKernel with prepared parameters, the
// backend's launch (argument packing, context check), and the tuned call `tuner(x, y, out, n)` (key,
// table lookup, grid, launch). Only the host time of each batch's loop is measured; the stream is
// drained between batches so that no launch waits for a full queue. benchmarks/compare/triton_launch.py
// is the peer (a Triton @autotune vector add called from Python).
//
//   bench_cuda_launch [n] [rounds] [batch]     defaults: 65536 floats, 200 rounds of 256 launches
//
// Prints a table and one line `FIGURE {json}`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/03_tune_cuda_vector.cpp"

#include "cuda_device.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
  using namespace example03;
  using clock = std::chrono::steady_clock;
  const auto first = cotune_bench::first_cuda_device("bench_cuda_launch");
  if (!first) return 0;
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 16;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  const int batch = argc > 3 ? std::atoi(argv[3]) : 256;
  const cuda::device& d = *first;

  std::vector<float> hx(static_cast<std::size_t>(n)), hy(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    hx[std::size_t(i)] = float(i % 100);
    hy[std::size_t(i)] = float(i % 7);
  }
  cuda::device_buffer<float> dx(d, hx), dy(d, hy), dout(d, std::size_t(n));
  cuda::device_span<const float> x = dx, y = dy;
  cuda::device_span<float> out = dout;

  auto opts = vector_add_options();
  opts.cache_results = false;
  const auto kernel = vector_add_kernel("s1_vector_add");
  vector_add_tuner tuner{kernel, vector_add_configs(), opts};
  const auto& result = tuner.tune_now(x, y, out, n);
  tuner(x, y, out, n);
  const auto got = dout.to_vector();
  for (int i = 0; i < n; ++i)
    if (got[std::size_t(i)] != hx[std::size_t(i)] + hy[std::size_t(i)]) {
      std::fprintf(stderr, "bench_cuda_launch: wrong output at %d\n", i);
      return 1;
    }

  // The same function, launched bare: parameters and grid prepared once, as a hand-written host
  // program would.
  const cotune::config best = result.best();
  cuda::cuda_backend backend;
  const auto fn = backend.load(backend.compile(kernel, best, d), kernel, best, d);
  const cotune::launch_grid grid = cotune::grid(best, cdiv(n, cotune::p("BLOCK")));
  const cuda::device_context& ctx = cuda::driver().context(d.ordinal);
  const CUstream stream = ctx.stream();
  CUdeviceptr px = x.data(), py = y.data(), po = out.data();
  int nn = n;
  void* params[] = {&px, &py, &po, &nn};
  const auto launch_kernel = ctx.api().launch_kernel;

  auto raw = [&] {
    for (int i = 0; i < batch; ++i)
      (void)launch_kernel(fn.handle, grid.x, 1, 1, fn.threads_per_block, 1, 1, 0, stream, params, nullptr);
  };
  auto via_backend = [&] {
    for (int i = 0; i < batch; ++i) backend.launch(fn, grid, x, y, out, nn);
  };
  auto tuned = [&] {
    for (int i = 0; i < batch; ++i) tuner(x, y, out, n);
  };
  struct path {
    const char* name;
    std::function<void()> run;
    std::vector<double> us; // host microseconds per launch, one sample per round
  };
  std::vector<path> paths{{"raw cuLaunchKernel", raw, {}}, {"backend.launch", via_backend, {}},
                          {"tuned call tuner(args...)", tuned, {}}};
  for (auto& p : paths) { // warm-up: page in the code paths and the driver's launch queue
    p.run();
    backend.synchronize(d);
  }
  for (int r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < paths.size(); ++k) {
      auto& p = paths[(k + std::size_t(r)) % paths.size()];
      const auto t0 = clock::now();
      p.run();
      const auto t1 = clock::now();
      backend.synchronize(d);
      p.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    }

  std::printf("%s\n", cuda::availability().text().c_str()); // the driver's and NVRTC's versions, for the record
  std::printf("S1 host time per launch on %s: out = x + y over %d floats, winner {%s}, grid %u x %u threads\n",
              backend.device_name(d).c_str(), n, best.text().c_str(), grid.x, fn.threads_per_block);
  std::printf("  %-28s %10s %10s %10s %8s\n", "path", "median us", "p10 us", "p90 us", "vs raw");
  const double raw_us = median(paths[0].us);
  for (const auto& p : paths)
    std::printf("  %-28s %10.3f %10.3f %10.3f %7.3fx\n", p.name, median(p.us), quantile(p.us, 0.1),
                quantile(p.us, 0.9), median(p.us) / raw_us);
  std::printf("FIGURE {\"figure\": \"S1\", \"side\": \"cotune\", \"n\": %d, \"rounds\": %d, \"batch\": %d, "
              "\"raw_us\": %.4f, \"backend_us\": %.4f, \"tuned_us\": %.4f, \"tuned_over_raw\": %.4f}\n",
              n, rounds, batch, raw_us, median(paths[1].us), median(paths[2].us), median(paths[2].us) / raw_us);
  return 0;
}
