// Issue 12, items 1 and 2: the bias of cotune's default CUDA benchmarker on kernels of about 1, 5, 20,
// 100 and 1000 us, and what noise stopping costs. The kernel is out = x + y over n floats, n
// calibrated per target duration against the ground truth: one CUDA graph of 1000 launches, replayed
// 5 times after an upload replay, its mean replay time over 1000. For each size, `reps` measurements
// with cotune's default benchmarker (the knobs' budgets, batch threshold, flush and noise target) and
// with per-launch timing (COTUNE_BENCH_BATCH_BELOW_US=0, the method of cotune before issue 12 and of
// Triton's do_bench). benchmarks/compare/triton_timing_bias.py is the peer (triton.testing.do_bench).
//
//   bench_cuda_timing_bias [reps] [targets_us...]     defaults: 5 measurements; 1 5 20 100 1000
//
// Prints a table and lines `FIGURE {json}` (one per size, one summary).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda.hpp>

#include "cuda_device.hpp"

namespace cuda = cotune::cuda;

namespace {

const cotune::kernel_source vector_add{.name = "timing_bias_add",
                                       .code = R"(
extern "C" __global__ void timing_bias_add(const float* x, const float* y, float* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = x[i] + y[i];
}
)",
                                       .entry = "timing_bias_add"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

/// Ground truth: ms per launch from a graph of `launches` launches of `fn` on the context's stream.
double graph_truth(const cuda::device_context& ctx, const std::function<void()>& fn, int launches = 1000,
                   int replays = 5) {
  const auto& api = ctx.api();
  const CUstream s = ctx.stream();
  ctx.make_current();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ctx.check(api.stream_begin_capture(s, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  for (int i = 0; i < launches; ++i) fn();
  ctx.check(api.stream_end_capture(s, &graph), "cuStreamEndCapture");
  ctx.check(api.graph_instantiate(&exec, graph, 0), "cuGraphInstantiate");
  CUevent a = nullptr, b = nullptr;
  ctx.check(api.event_create(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  ctx.check(api.event_create(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  ctx.check(api.graph_launch(exec, s), "cuGraphLaunch"); // upload
  double total = 0;
  for (int r = 0; r < replays; ++r) {
    ctx.check(api.event_record(a, s), "cuEventRecord");
    ctx.check(api.graph_launch(exec, s), "cuGraphLaunch");
    ctx.check(api.event_record(b, s), "cuEventRecord");
    ctx.check(api.event_synchronize(b), "cuEventSynchronize");
    float ms = 0;
    ctx.check(api.event_elapsed_time(&ms, a, b), "cuEventElapsedTime");
    total += ms;
  }
  (void)api.event_destroy(a);
  (void)api.event_destroy(b);
  (void)api.graph_exec_destroy(exec);
  (void)api.graph_destroy(graph);
  return total / replays / launches;
}

} // namespace

int main(int argc, char** argv) {
  const auto first = cotune_bench::first_cuda_device("bench_cuda_timing_bias");
  if (!first) return 0;
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<double> targets;
  for (int i = 2; i < argc; ++i) targets.push_back(std::atof(argv[i]));
  if (targets.empty()) targets = {1, 5, 20, 100, 1000};
  const cuda::device& d = *first;
  cuda::cuda_backend backend;
  const auto cfg = cotune::config({}, cotune::launch_options{.num_warps = 8});
  const auto f = backend.load(backend.compile(vector_add, cfg, d), vector_add, cfg, d);
  const auto& ctx = cuda::driver().context(d.ordinal);

  // One allocation of the largest size; smaller kernels use its prefix. 1000 us at ~4.8 TB/s moves
  // ~4.8 GB: 400M floats per array.
  const auto max_n = static_cast<std::size_t>(std::max(1.0, *std::max_element(targets.begin(), targets.end())) * 1e-6 *
                                              6e12 / 12.0);
  cuda::device_buffer<float> bx(d, max_n), by(d, max_n), bo(d, max_n);
  bx.zero();
  by.zero();
  cuda::device_span<const float> x = bx, y = by;
  cuda::device_span<float> out = bo;
  auto launcher = [&](long long n) {
    const auto blocks = static_cast<unsigned>(std::min<long long>((n + 255) / 256, d.sm_count * 32LL));
    return [&, n, blocks]() mutable { backend.launch(f, cotune::launch_grid{.x = std::max(1u, blocks)}, x, y, out, n); };
  };

  std::printf("%s\n", cuda::availability().text().c_str());
  std::printf("timing bias on %s: out = x + y; truth = graph of 1000 launches; %d measurements per size\n",
              backend.device_name(d).c_str(), reps);
  std::printf("  %8s %11s %10s | %10s %8s %-18s %8s %7s %8s | %10s %8s %8s\n", "target", "n", "truth us",
              "cotune us", "bias", "method", "rsd", "samples", "wall ms", "per-launch", "bias", "wall ms");
  // Made once, as a tuning makes one per device: their events are then created once.
  cuda::cuda_benchmarker by_default(d); // the default: the knobs as the environment sets them
  cuda::cuda_benchmarker per_launch(d, cuda::cuda_bench_options{.batch_below_us = 0.0});
  std::vector<double> all_wall, all_rsd, worst_bias;
  for (double target : targets) {
    // Calibrate n: a first guess from bandwidth, then two corrections from the truth (a kernel at the
    // launch-latency floor stays there: 2^12 floats is the smallest size tried).
    long long n = std::clamp<long long>(static_cast<long long>(target * 1e-6 * 3e12 / 12.0), 1 << 12,
                                        static_cast<long long>(max_n));
    double truth = graph_truth(ctx, launcher(n));
    for (int k = 0; k < 2; ++k) {
      n = std::clamp<long long>(static_cast<long long>(static_cast<double>(n) * target / (truth * 1e3)), 1 << 12,
                                static_cast<long long>(max_n));
      truth = graph_truth(ctx, launcher(n));
    }
    auto fn = launcher(n);
    std::vector<double> def_us, def_rsd, def_wall, pl_us, pl_wall;
    std::string method;
    std::size_t samples = 0;
    for (int r = 0; r < reps; ++r) {
      {
        const auto m = by_default.measure(fn, cotune::bench_options{.warmup_ms = cotune::knobs().bench.warmup_ms.get(),
                                                           .rep_ms = cotune::knobs().bench.rep_ms.get(),
                                                           .quantiles = {0.5}});
        def_us.push_back(m.times[0] * 1e3);
        def_rsd.push_back(m.rsd);
        def_wall.push_back(m.wall_ms);
        method = m.method;
        samples += m.samples;
      }
      {
        const auto m = per_launch.measure(fn, cotune::bench_options{.warmup_ms = cotune::knobs().bench.warmup_ms.get(),
                                                           .rep_ms = cotune::knobs().bench.rep_ms.get(),
                                                           .quantiles = {0.5}});
        pl_us.push_back(m.times[0] * 1e3);
        pl_wall.push_back(m.wall_ms);
      }
    }
    const double truth_us = truth * 1e3, got = median(def_us), old = median(pl_us);
    const double bias = 100.0 * (got / truth_us - 1.0), old_bias = 100.0 * (old / truth_us - 1.0);
    std::printf("  %8.0f %11lld %10.3f | %10.3f %+7.1f%% %-18s %7.3f%% %7.1f %8.1f | %10.3f %+7.1f%% %8.1f\n", target,
                n, truth_us, got, bias, method.c_str(), 100.0 * mean(def_rsd),
                static_cast<double>(samples) / reps, mean(def_wall), old, old_bias, mean(pl_wall));
    std::printf("FIGURE {\"figure\": \"timing_bias\", \"side\": \"cotune\", \"target_us\": %.0f, \"n\": %lld, "
                "\"truth_us\": %.4f, \"cotune_us\": %.4f, \"bias_pct\": %.2f, \"method\": \"%s\", \"rsd\": %.5f, "
                "\"samples\": %.1f, \"wall_ms\": %.2f, \"per_launch_us\": %.4f, \"per_launch_bias_pct\": %.2f, "
                "\"per_launch_wall_ms\": %.2f}\n",
                target, n, truth_us, got, bias, method.c_str(), mean(def_rsd), static_cast<double>(samples) / reps,
                mean(def_wall), old, old_bias, mean(pl_wall));
    all_wall.insert(all_wall.end(), def_wall.begin(), def_wall.end());
    all_rsd.insert(all_rsd.end(), def_rsd.begin(), def_rsd.end());
    worst_bias.push_back(std::abs(bias));
  }
  std::printf("noise stopping (target %.2f%%, min %d samples, budget %.0f ms): %.1f wall ms per measurement on "
              "average, achieved rsd %.3f%% on average; worst |bias| %.1f%%\n",
              100.0 * cotune::knobs().bench.noise_target.get(), cotune::knobs().bench.min_samples.get(),
              cotune::knobs().bench.rep_ms.get(), mean(all_wall), 100.0 * mean(all_rsd),
              *std::max_element(worst_bias.begin(), worst_bias.end()));
  std::printf("FIGURE {\"figure\": \"timing_bias_summary\", \"side\": \"cotune\", \"wall_ms_mean\": %.2f, "
              "\"rsd_mean\": %.5f, \"worst_abs_bias_pct\": %.2f, \"noise_target\": %.4f}\n",
              mean(all_wall), mean(all_rsd), *std::max_element(worst_bias.begin(), worst_bias.end()),
              cotune::knobs().bench.noise_target.get());
  return 0;
}
