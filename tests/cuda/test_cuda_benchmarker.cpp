// Tests of cotune::cuda::cuda_benchmarker. All need a GPU ([gpu]) and skip without one; the hidden
// "[.probe]" case prints measurements behind the module's default constants (run it explicitly).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/cuda/device_buffer.hpp>

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;
using cotune::config;
using cotune::kernel_source;
using cotune::launch_options;

namespace {

std::optional<cuda::device> first_gpu() {
  auto all = cuda::devices();
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string skip_reason() { return "skipped: no CUDA device here (" + cuda::availability().message + ")"; }

// Reads `n` floats and writes their sum per block: a memory-bound kernel whose time depends on
// whether its input is in L2.
const kernel_source reduce{.name = "bench_reduce",
                           .code = R"(
extern "C" __global__ void bench_reduce(const float4* in, float* out, long long n4) {
  float s = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v = in[i];
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.678f) out[0] = s; // keeps the loads alive without a reduction
}
)",
                           .entry = "bench_reduce"};

const kernel_source tiny{.name = "bench_tiny",
                         .code = "extern \"C\" __global__ void bench_tiny(int* x) { if (threadIdx.x == 0) x[blockIdx.x] += 1; }\n",
                         .entry = "bench_tiny"};

} // namespace

TEST_CASE("the benchmarker returns three quantiles for a real kernel", "[cuda][cuda_benchmarker][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  const auto c = config({}, launch_options{.num_warps = 8});
  auto f = backend.load(backend.compile(reduce, c, *d), reduce, c, *d);
  const std::size_t n = std::size_t{64} << 20; // 256 MB of floats: several times any L2
  cuda::device_buffer<float> in(*d, n), out(*d, 1);
  in.zero();
  cuda::device_span<const float> sin = in;
  cuda::device_span<float> sout = out;
  long long n4 = static_cast<long long>(n / 4);
  const cotune::launch_grid grid{.x = static_cast<unsigned>(d->sm_count * 4)};

  cuda::cuda_benchmarker bench(backend, *d, cuda::cuda_bench_options{.batch_below_us = 0.0});
  CHECK(bench.flush_bytes() >= static_cast<std::size_t>(d->l2_bytes));
  auto t = bench.bench([&] { backend.launch(f, grid, sin, sout, n4); },
                       cotune::bench_options{.warmup_ms = 5, .rep_ms = 25, .quantiles = {0.5, 0.2, 0.8}});
  REQUIRE(t.size() == 3);
  CHECK(t[0] > 0.0);
  CHECK(t[1] <= t[0]);
  CHECK(t[0] <= t[2]);
  WARN("256 MB read: median " << t[0] << " ms (" << (static_cast<double>(n) * 4 / (t[0] * 1e-3) / 1e12) << " TB/s), p20 "
                              << t[1] << ", p80 " << t[2]);

  const auto m = bench.measure([&] { backend.launch(f, grid, sin, sout, n4); },
                               cotune::bench_options{.warmup_ms = 5, .rep_ms = 25, .quantiles = {0.5}});
  CHECK(m.method == "per-launch");
  CHECK(m.samples >= 1);
  WARN("256 MB read per launch: rsd " << m.rsd << " over " << m.samples << " samples ("
                                      << cotune::to_string(m.stopped) << "), " << m.wall_ms << " ms");

  auto all = bench.bench([&] { backend.launch(f, grid, sin, sout, n4); },
                         cotune::bench_options{.warmup_ms = 1, .rep_ms = 5, .mode = cotune::return_mode::all});
  CHECK(all.size() >= 1);
  CHECK(std::all_of(all.begin(), all.end(), [](double v) { return v > 0.0; }));
}

TEST_CASE("short kernels are timed in graph batches, long ones per launch, as the options say",
          "[cuda][cuda_benchmarker][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  const auto c = config({}, launch_options{.num_warps = 1});
  auto f = backend.load(backend.compile(tiny, c, *d), tiny, c, *d);
  cuda::device_buffer<int> counter(*d, 1);
  cuda::device_span<int> s = counter;
  std::size_t launches = 0;
  auto fn = [&] {
    backend.launch(f, cotune::launch_grid{.x = 1}, s);
    ++launches;
  };
  auto ran = [&] {
    backend.synchronize(*d);
    return static_cast<std::size_t>(counter.to_vector()[0]);
  };
  const cotune::bench_options opts{.warmup_ms = 1, .rep_ms = 10, .quantiles = {0.5, 0.2, 0.8}};

  // Forced by the options, never by a timing: a threshold no estimate reaches, and the graph flag.
  for (auto o : {cuda::cuda_bench_options{.batch_below_us = 1e9}, cuda::cuda_bench_options{.graph = true}}) {
    counter.zero();
    launches = 0;
    cuda::cuda_benchmarker graph(backend, *d, o);
    const auto m = graph.measure(fn, opts);
    REQUIRE(m.times.size() == 3);
    CHECK(m.times[0] > 0.0);
    CHECK(m.times[1] <= m.times[2]);
    CHECK(m.method == fmt::format("graph-batch x{}", m.batch));
    CHECK(m.batch >= 1);
    CHECK(m.samples >= 1);
    CHECK(m.stopped != cotune::stop_reason::none);
    CHECK(std::isfinite(m.rsd));
    // Replays run captured launches again without calling fn: more ran than were called outside capture.
    CHECK(ran() >= 1 + 5 + m.warmup_runs + m.samples * m.batch);
    CHECK(ran() > launches - m.batch);
    WARN("tiny kernel, " << m.method << ": " << m.times[0] * 1e3 << " us, rsd " << m.rsd << ", " << m.samples
                         << " samples (" << cotune::to_string(m.stopped) << "), " << m.wall_ms << " ms");
  }

  // Not capturable: the same batches as plain calls, each one counted.
  {
    counter.zero();
    launches = 0;
    cuda::cuda_benchmarker b2b(backend, *d, cuda::cuda_bench_options{.graph = true});
    auto o = opts;
    o.capturable = false;
    const auto m = b2b.measure(fn, o);
    CHECK(m.method == fmt::format("back-to-back x{}", m.batch));
    CHECK(launches == 1 + 5 + m.warmup_runs + m.samples * m.batch);
    CHECK(ran() == launches);
  }

  // Per launch (Triton's do_bench), flush off.
  {
    counter.zero();
    launches = 0;
    cuda::cuda_benchmarker events(backend, *d, cuda::cuda_bench_options{.flush_factor = 0.0, .batch_below_us = 0.0});
    CHECK(events.flush_bytes() == 0);
    const auto m = events.measure(fn, opts);
    REQUIRE(m.times.size() == 3);
    CHECK(m.method == "per-launch");
    CHECK(m.batch == 1);
    CHECK(launches == 1 + 5 + m.warmup_runs + m.samples);
    CHECK(ran() == launches);
    WARN("tiny kernel, per launch: " << m.times[0] * 1e3 << " us (launch overhead included)");
  }

  // The knobs choose as the options do.
  for (bool by_graph_knob : {true, false}) {
    auto g = cuda::cuda_knobs().graph.scoped(by_graph_knob);
    auto t = cotune::knobs().bench.batch_below_us.scoped(by_graph_knob ? 0.0 : 1e9);
    cuda::cuda_benchmarker from_knobs(backend, *d);
    CHECK(from_knobs.measure(fn, opts).method.starts_with("graph-batch x"));
  }
  {
    auto t = cotune::knobs().bench.batch_below_us.scoped(0.0);
    cuda::cuda_benchmarker from_knobs(backend, *d);
    CHECK(from_knobs.measure(fn, opts).method == "per-launch");
  }
  // The default decides by the estimate: shown, not asserted (a test never asserts a timing).
  cuda::cuda_benchmarker by_default(backend, *d);
  WARN("tiny kernel by default: " << by_default.measure(fn, opts).method);
}

TEST_CASE("an exception from the benchmarked callable propagates and the device stays usable",
          "[cuda][cuda_benchmarker][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  const auto c = config({}, launch_options{.num_warps = 1});
  auto f = backend.load(backend.compile(tiny, c, *d), tiny, c, *d);
  cuda::device_buffer<int> counter(*d, 1);
  counter.zero();
  cuda::device_span<int> s = counter;
  for (auto o : {cuda::cuda_bench_options{.batch_below_us = 0.0}, cuda::cuda_bench_options{.graph = true}}) {
    cuda::cuda_benchmarker bench(backend, *d, o);
    int calls = 0;
    auto fn = [&] {
      if (++calls == 7) throw cotune::error("hook failed");
      backend.launch(f, cotune::launch_grid{.x = 1}, s);
    };
    CHECK_THROWS_WITH(bench.bench(fn, cotune::bench_options{.warmup_ms = 1, .rep_ms = 5}), "hook failed");
    auto ok = bench.bench([&] { backend.launch(f, cotune::launch_grid{.x = 1}, s); },
                          cotune::bench_options{.warmup_ms = 1, .rep_ms = 5, .quantiles = {0.5}});
    CHECK(ok.size() == 1);
  }
}

TEST_CASE("an out-of-range quantile is refused before anything runs", "[cuda][cuda_benchmarker][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cuda::cuda_benchmarker bench(*d);
  int calls = 0;
  CHECK_THROWS_AS(bench.bench([&] { ++calls; }, cotune::bench_options{.quantiles = {1.5}}), cotune::error);
  CHECK(calls == 0);
}

TEST_CASE("probe: L2 flush factor, graph size and library load times", "[cuda][cuda_benchmarker][gpu][.probe]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  std::cout << cuda::availability().text() << "\n"
            << backend.device_name(*d) << ": " << d->sm_count << " SMs, L2 " << d->l2_bytes << " B, shared opt-in "
            << d->max_shared_per_block_optin << " B\n";
  const auto c = config({}, launch_options{.num_warps = 8});
  auto f = backend.load(backend.compile(reduce, c, *d), reduce, c, *d);
  // A kernel that reads exactly half the L2: fully cached when warm, from HBM when flushed.
  const std::size_t n = static_cast<std::size_t>(d->l2_bytes) / 2 / 4 / 4 * 4;
  cuda::device_buffer<float> in(*d, n), out(*d, 1);
  in.zero();
  cuda::device_span<const float> sin = in;
  cuda::device_span<float> sout = out;
  long long n4 = static_cast<long long>(n / 4);
  const cotune::launch_grid grid{.x = static_cast<unsigned>(d->sm_count * 4)};
  for (double factor : {0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0}) {
    cuda::cuda_benchmarker bench(backend, *d, cuda::cuda_bench_options{.flush_factor = factor, .batch_below_us = 0.0});
    auto t = bench.bench([&] { backend.launch(f, grid, sin, sout, n4); },
                         cotune::bench_options{.warmup_ms = 10, .rep_ms = 100, .quantiles = {0.5, 0.2, 0.8}});
    std::cout << "flush factor " << factor << " (" << bench.flush_bytes() / 1e6 << " MB): kernel on "
              << n * 4 / 1e6 << " MB median " << t[0] * 1e3 << " us, p20 " << t[1] * 1e3 << ", p80 " << t[2] * 1e3
              << "\n";
  }
  // Capture + instantiation cost of a graph of N launches.
  const auto tc = config({}, launch_options{.num_warps = 1});
  auto tf = backend.load(backend.compile(tiny, tc, *d), tiny, tc, *d);
  cuda::device_buffer<int> counter(*d, 1);
  cuda::device_span<int> s = counter;
  for (std::size_t launches : {1000, 10000}) {
    // A batch target no graph reaches: every graph has max_graph_launches launches.
    cuda::cuda_benchmarker bench(
        backend, *d, cuda::cuda_bench_options{.graph = true, .max_graph_launches = launches, .batch_target_ms = 1e6});
    auto t0 = std::chrono::steady_clock::now();
    auto t = bench.bench([&] { backend.launch(tf, cotune::launch_grid{.x = 1}, s); },
                         cotune::bench_options{.warmup_ms = 1, .rep_ms = 1000, .quantiles = {0.5}});
    auto wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "graph of " << launches << " launches: " << t[0] * 1e3 << " us per launch; bench() wall " << wall
              << " ms\n";
  }
  // The warm path from a populated cache: compile (a hit), load, first launch.
  {
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    const auto wc = config({{"UNIQUE", 1}}, launch_options{.num_warps = 1});
    const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
    (void)binaries.get_or_compile(tiny, wc, *d); // populate
    auto t0 = clock::now();
    auto bin = binaries.get_or_compile(tiny, wc, *d);
    auto t1 = clock::now();
    auto wf = binaries.load(bin, tiny, wc, *d);
    auto t2 = clock::now();
    backend.launch(wf, cotune::launch_grid{.x = 1}, s);
    backend.synchronize(*d);
    auto t3 = clock::now();
    std::cout << "warm path: compile (cache hit: " << bin.from_cache << ") " << ms(t0, t1) << " ms, load " << ms(t1, t2)
              << " ms, first launch + sync " << ms(t2, t3) << " ms\n";
    // Host time per launch: the backend's launch against a bare cuLaunchKernel of the same function.
    constexpr int launches = 20000;
    auto b0 = clock::now();
    for (int i = 0; i < launches; ++i) backend.launch(wf, cotune::launch_grid{.x = 1}, s);
    auto b1 = clock::now();
    backend.synchronize(*d);
    CUdeviceptr raw = s.data();
    void* params[] = {&raw};
    const auto& ctx = cuda::driver().context(d->ordinal);
    auto r0 = clock::now();
    for (int i = 0; i < launches; ++i)
      (void)ctx.api().launch_kernel(wf.handle, 1, 1, 1, 32, 1, 1, 0, ctx.stream(), params, nullptr);
    auto r1 = clock::now();
    backend.synchronize(*d);
    std::cout << "host time per launch: backend.launch " << ms(b0, b1) * 1e3 / launches << " us, bare cuLaunchKernel "
              << ms(r0, r1) * 1e3 / launches << " us\n";
  }
  std::cout.flush();
  SUCCEED();
}
