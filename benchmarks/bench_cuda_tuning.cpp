// S2, S3 and S8: tuning the 16-candidate GEMM of example 04 (fp16 in, fp32 accumulate) on M = N = K = size.
//
//   bench_cuda_tuning cold   TAG [size]   S2: cold tuning through the pipeline (compile pool + device thread)
//   bench_cuda_tuning cold1  TAG [size]   S2: the same pipeline with one compile thread
//   bench_cuda_tuning serial TAG [size]   S2: compile every candidate, then benchmark each, one at a time
//   bench_cuda_tuning warm   TAG [size]   S3: a new process with results and cubins on disk (after `cold`)
//   bench_cuda_tuning multi  TAG [size]   S8: one GPU against two on the same list (binaries cached)
//
// TAG names the kernel (gemm_TAG): give every cold run its own, with COTUNE_CACHE_DIR pointing at an
// empty directory, so that no cache hides compile time; `warm` and `multi` reuse the tag and the
// directory of a `cold` run. Cold modes first compile and launch an unrelated kernel, so that loading
// NVRTC and creating the context are not counted (the Triton peer warms up the same way). Benchmark
// budgets are the knobs' defaults (25 ms warm-up, 100 ms of runs: Triton's). The peer is
// benchmarks/compare/triton_matmul.py. Prints a table and lines `FIGURE {json}`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/04_tune_cuda_gemm.cpp"

namespace {

using namespace example04;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0, clock_type::time_point t1 = clock_type::now()) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// The operands of one size on one device.
struct operands {
  cuda::device_buffer<cuda::float16> a, b;
  cuda::device_buffer<float> c;
  int size;
  operands(const cuda::device& d, int n, const std::vector<cuda::float16>& ha, const std::vector<cuda::float16>& hb)
      : a(d, ha), b(d, hb), c(d, std::size_t(n) * std::size_t(n)), size(n) {}
  [[nodiscard]] std::tuple<A_span, A_span, C_span, int, int, int> args() const {
    return {a.span(), b.span(), c.span(), size, size, size};
  }
};

/// Checks 256 sampled entries of C against double-precision dot products of the fp16 inputs.
bool check_sampled(const operands& o, const std::vector<cuda::float16>& ha, const std::vector<cuda::float16>& hb,
                   double& max_rel) {
  const auto c = o.c.to_vector();
  const std::size_t n = std::size_t(o.size);
  std::mt19937 rng(7);
  max_rel = 0;
  double max_ref = 0, max_err = 0;
  for (int s = 0; s < 256; ++s) {
    const std::size_t i = rng() % n, j = rng() % n;
    double ref = 0;
    for (std::size_t k = 0; k < n; ++k) ref += double(float(ha[i * n + k])) * double(float(hb[k * n + j]));
    max_ref = std::max(max_ref, std::fabs(ref));
    max_err = std::max(max_err, std::fabs(ref - double(c[i * n + j])));
  }
  max_rel = max_err / std::max(max_ref, 1e-30);
  return max_rel < 1e-3;
}

/// Compiles and launches a small unrelated kernel: NVRTC loaded and past its first compile, module
/// loading and the context warmed up, none of which belongs to tuning the GEMM.
void warm_up(const cuda::cuda_backend& backend, const cuda::device& d, const std::string& tag) {
  const std::string name = "warm_up_" + tag;
  const cotune::kernel_source k{.name = name,
                                .code = "#include <cuda_fp16.h>\nextern \"C\" __global__ void " + name +
                                        "(float* x) { x[threadIdx.x] = __half2float(__float2half(1.0f)); }\n",
                                .entry = name};
  const cotune::config c({}, cotune::launch_options{.num_warps = 1});
  const auto fn = backend.load(backend.compile(k, c, d), k, c, d);
  cuda::device_buffer<float> x(d, 32);
  cuda::device_span<float> s = x;
  backend.launch(fn, cotune::launch_grid{}, s);
  backend.synchronize(d);
}

void print_figure(const char* figure, const std::string& mode, const std::string& fields) {
  std::printf("FIGURE {\"figure\": \"%s\", \"side\": \"cotune\", \"mode\": \"%s\", %s}\n", figure, mode.c_str(),
              fields.c_str());
  std::fflush(stdout);
}

int usage() {
  std::fprintf(stderr, "usage: bench_cuda_tuning cold|cold1|serial|warm|multi TAG [size]\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  const auto t_main = clock_type::now();
  if (argc < 3) return usage();
  const std::string mode = argv[1], tag = argv[2];
  const int size = argc > 3 ? std::atoi(argv[3]) : 4096;
  if (size <= 0 || size % 128 != 0) return usage();

  // The backend first: it has NVRTC opened in the background as soon as the driver opens.
  cuda::cuda_backend backend;
  // COTUNE_BENCH_EARLY_SERVER=1 (a probe): fork the compile server on another thread while the driver
  // starts and the context is created, instead of at the first compile (the untimed warm-up below).
  std::thread early_server;
  if (const char* e = std::getenv("COTUNE_BENCH_EARLY_SERVER"); e && std::string_view(e) == "1")
    early_server = std::thread([] { (void)cuda::nvrtc().start_compile_server(); });
  const auto devices = backend.devices();
  if (devices.empty()) {
    std::printf("no CUDA device: skipping (%s)\n", cuda::availability().message.c_str());
    return 0;
  }
  const cuda::device& d = devices.front();
  const auto t_ctx0 = clock_type::now();
  (void)cuda::driver().context(d.ordinal);
  const double ctx_ms = ms_since(t_ctx0);
  if (early_server.joinable()) early_server.join();
  const auto ha = random_halves(std::size_t(size) * std::size_t(size), 1);
  const auto hb = random_halves(std::size_t(size) * std::size_t(size), 2);
  operands ops(d, size, ha, hb);
  // Plain variables, not a structured binding: clang 14 cannot capture bindings in lambdas.
  const A_span a = ops.a.span(), b = ops.b.span();
  const C_span c = ops.c.span();
  const int m = size, n = size, k = size;
  const std::string kernel_name = "gemm_" + tag;
  const std::string problem = fmt::format("{0}x{0}x{0} fp16 GEMM", size);

  if (mode == "cold" || mode == "cold1") {
    // Not timed, as Triton's side also compiles and launches a small kernel first: loading NVRTC and
    // starting the compile server (one fork of this process) happen here.
    const auto t_warm = clock_type::now();
    warm_up(backend, d, tag);
    const double warm_ms = ms_since(t_warm);
    std::unique_ptr<cotune::engine> own;
    if (mode == "cold1") own = std::make_unique<cotune::engine>(1);
    cotune::engine& eng = own ? *own : cotune::engine::shared();
    const auto before = cuda::nvrtc().compilations();
    const auto t0 = clock_type::now();
    gemm_tuner tuner{gemm_kernel(kernel_name), gemm_configs(), gemm_options(), backend, eng};
    const auto& r = tuner.tune_now(a, b, c, m, n, k);
    const double wall = ms_since(t0);
    std::printf("S2 %s: cold tuning of %s, %zu candidates, %zu compile thread(s), on %s: %.1f ms\n", mode.c_str(),
                problem.c_str(), r.candidates.size(), eng.compile_threads(), backend.device_name(d).c_str(), wall);
    cotune::printing_observer::print_table(stdout, r);
    double compile_sum = 0, compile_max = 0, bench_best = r.candidates[r.winner].time[0];
    for (const auto& cand : r.candidates) {
      compile_sum += cand.compile_ms;
      compile_max = std::max(compile_max, cand.compile_ms);
    }
    std::printf("compiles: %.1f ms in all, longest %.1f ms; untimed warm-up before (NVRTC, compile server, one small "
                "kernel): %.1f ms\n", compile_sum, compile_max, warm_ms);
    ops.c.zero();
    tuner(a, b, c, m, n, k);
    double rel = 0;
    const bool ok = check_sampled(ops, ha, hb, rel);
    std::printf("winner {%s}: %.4f ms, %.1f TFLOP/s; sampled check: max rel error %.2e -> %s\n", r.best().text().c_str(),
                bench_best, 2.0 * size * size * size / (bench_best * 1e9), rel, ok ? "OK" : "WRONG");
    print_figure("S2", mode,
                 fmt::format("\"size\": {}, \"candidates\": {}, \"compile_threads\": {}, \"wall_ms\": {:.1f}, "
                             "\"nvrtc_compilations\": {}, \"sum_compile_ms\": {:.1f}, \"max_compile_ms\": {:.1f}, "
                             "\"warm_up_ms\": {:.1f}, \"compile_processes\": {}, \"isolate\": \"{}\", \"winner\": \"{}\", "
                             "\"winner_ms\": {:.4f}, \"correct\": {}",
                             size, r.candidates.size(), eng.compile_threads(), wall,
                             cuda::nvrtc().compilations() - before, compile_sum, compile_max, warm_ms,
                             cuda::cuda_knobs().compile_processes.get() ? "true" : "false",
                             cotune::knobs().autotuning.isolate.get(), r.best().text(), bench_best,
                             ok ? "true" : "false"));
    return ok ? 0 : 1;
  }

  if (mode == "serial") {
    warm_up(backend, d, tag);
    const auto kernel = gemm_kernel(kernel_name);
    const auto opts = gemm_options();
    const auto configs = opts.early_config_prune(gemm_configs(), a, b, c, m, n, k);
    const cotune::bench_options bopts{.warmup_ms = cotune::knobs().bench.warmup_ms.get(),
                                      .rep_ms = cotune::knobs().bench.rep_ms.get(),
                                      .quantiles = {0.5, 0.2, 0.8}};
    const auto t0 = clock_type::now();
    const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
    std::vector<std::optional<cuda::cuda_backend::binary>> bins;
    for (const auto& cfg : configs) {
      try {
        bins.emplace_back(binaries.get_or_compile(kernel, cfg, d).binary);
      } catch (const cotune::error&) {
        bins.emplace_back();
      }
    }
    const double compile_ms = ms_since(t0);
    cuda::cuda_benchmarker bench(backend, d);
    double best_ms = INFINITY;
    std::size_t best = 0;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      if (!bins[i]) continue;
      try {
        const auto fn = backend.load(*bins[i], kernel, configs[i], d);
        const auto grid = opts.grid(configs[i], a, b, c, m, n, k);
        const auto t = bench.bench([&] { backend.launch(fn, grid, a, b, c, m, n, k); }, bopts);
        std::printf("  %-80s %10.4f ms\n", configs[i].text().c_str(), t[0]);
        if (t[0] < best_ms) {
          best_ms = t[0];
          best = i;
        }
      } catch (const cotune::error& e) {
        std::printf("  %-80s failed: %s\n", configs[i].text().c_str(), e.what());
      }
    }
    const double wall = ms_since(t0);
    std::printf("S2 serial: compile all (%.1f ms), then benchmark all, one at a time, %s: %.1f ms; winner {%s}\n",
                compile_ms, problem.c_str(), wall, configs[best].text().c_str());
    print_figure("S2", mode,
                 fmt::format("\"size\": {}, \"candidates\": {}, \"wall_ms\": {:.1f}, \"compile_ms\": {:.1f}, "
                             "\"winner\": \"{}\", \"winner_ms\": {:.4f}",
                             size, configs.size(), wall, compile_ms, configs[best].text(), best_ms));
    return 0;
  }

  if (mode == "warm") {
    // Context ready and the user's data on the device: from here to the first tuned launch.
    backend.synchronize(d);
    const auto t0 = clock_type::now();
    gemm_tuner tuner{gemm_kernel(kernel_name), gemm_configs(), gemm_options(), backend};
    tuner(a, b, c, m, n, k);
    const double first_launch_ms = ms_since(t0);
    backend.synchronize(d);
    const double first_done_ms = ms_since(t0);
    const auto t1 = clock_type::now();
    tuner(a, b, c, m, n, k);
    const double second_call_us = ms_since(t1) * 1e3;
    backend.synchronize(d);
    const auto compilations = cuda::nvrtc().compilations();
    std::printf("S3 warm start of %s in a new process: context %.1f ms (not counted); first tuned launch issued "
                "%.3f ms after the context was ready (%.3f ms with the kernel done); second call %.2f us; NVRTC "
                "compilations %llu; results from cache %zu, measured %zu; process start to first launch %.1f ms\n",
                problem.c_str(), ctx_ms, first_launch_ms, first_done_ms, second_call_us,
                static_cast<unsigned long long>(compilations), tuner.cached_tunings(), tuner.measured_tunings(),
                ms_since(t_main, t1));
    print_figure("S3", mode,
                 fmt::format("\"size\": {}, \"context_ms\": {:.1f}, \"first_launch_ms\": {:.3f}, "
                             "\"first_done_ms\": {:.3f}, \"nvrtc_compilations\": {}, \"cached\": {}, \"measured\": {}",
                             size, ctx_ms, first_launch_ms, first_done_ms, compilations, tuner.cached_tunings(),
                             tuner.measured_tunings()));
    return compilations == 0 && tuner.cached_tunings() == 1 ? 0 : 1;
  }

  if (mode == "multi") {
    if (devices.size() < 2 || !cuda::interchangeable(devices[0], devices[1])) {
      std::printf("S8 needs two identical CUDA devices; found %zu: skipping\n", devices.size());
      return 0;
    }
    operands ops1(devices[1], size, ha, hb);
    auto on = [&](std::size_t dev) { return dev == 0 ? ops.args() : ops1.args(); };
    auto make = [&](std::size_t launch_dev, bool split) {
      auto opts = gemm_options();
      opts.cache_results = false; // every tuning measures
      opts.device = launch_dev;
      if (split)
        opts.args_for_device = [&](std::size_t dev, const A_span&, const A_span&, const C_span&, const int&,
                                   const int&, const int&) { return on(dev); };
      return std::make_unique<gemm_tuner>(gemm_kernel(kernel_name), gemm_configs(), std::move(opts), backend);
    };
    // Binaries first (normally hits from the `cold` run's cache): the list is benchmark-bound.
    (void)make(0, false)->warmup(a, b, c, m, n, k);
    std::vector<double> one_ms, two_ms;
    std::size_t one_winner = 0, two_winner = 0;
    std::string devices_used;
    for (int rep = 0; rep < 2; ++rep) {
      auto one = make(0, false);
      auto t0 = clock_type::now();
      one_winner = one->tune_now(a, b, c, m, n, k).winner;
      one_ms.push_back(ms_since(t0));
      auto two = make(0, true);
      t0 = clock_type::now();
      const auto& r2 = two->tune_now(a, b, c, m, n, k);
      two_ms.push_back(ms_since(t0));
      two_winner = r2.winner;
      devices_used.clear();
      for (const auto& cand : r2.candidates) devices_used += std::to_string(cand.device);
    }
    // tune_many: one tuning per device (tuners bound to GPU 0 and GPU 1) against both on GPU 0.
    auto many = [&](bool spread) {
      std::vector<std::unique_ptr<gemm_tuner>> tuners;
      tuners.push_back(make(0, false));
      tuners.push_back(make(spread ? 1 : 0, false));
      std::vector<cotune::tuning_task> jobs;
      for (std::size_t i = 0; i < 2; ++i)
        jobs.push_back([&, i] {
          return std::apply([&](auto... xs) { return tuners[i]->tune(xs...); }, on(spread ? i : 0));
        });
      const auto t0 = clock_type::now();
      const auto outcomes = cotune::tune_many(std::move(jobs));
      const double wall = ms_since(t0);
      for (const auto& o : outcomes)
        if (!o.ok()) std::rethrow_exception(o.error);
      return wall;
    };
    const double many_one = many(false), many_two = many(true);
    const double one = std::accumulate(one_ms.begin(), one_ms.end(), 0.0) / double(one_ms.size());
    const double two = std::accumulate(two_ms.begin(), two_ms.end(), 0.0) / double(two_ms.size());
    std::printf("S8 %s, %zu candidates, binaries cached: one GPU %.1f / %.1f ms, two GPUs %.1f / %.1f ms -> %.2fx "
                "(winners %zu / %zu; devices per candidate %s); tune_many of 2 jobs: both on GPU 0 %.1f ms, one per "
                "GPU %.1f ms -> %.2fx\n",
                problem.c_str(), gemm_configs().size(), one_ms[0], one_ms[1], two_ms[0], two_ms[1], one / two,
                one_winner, two_winner, devices_used.c_str(), many_one, many_two, many_one / many_two);
    print_figure("S8", mode,
                 fmt::format("\"size\": {}, \"one_gpu_ms\": {:.1f}, \"two_gpu_ms\": {:.1f}, \"speedup\": {:.3f}, "
                             "\"same_winner\": {}, \"tune_many_one_gpu_ms\": {:.1f}, \"tune_many_two_gpu_ms\": {:.1f}, "
                             "\"tune_many_speedup\": {:.3f}",
                             size, one, two, one / two, one_winner == two_winner ? "true" : "false", many_one,
                             many_two, many_one / many_two));
    return 0;
  }
  return usage();
}
