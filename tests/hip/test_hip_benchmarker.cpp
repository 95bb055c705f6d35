// Tests for cotune/hip/hip_benchmarker.hpp: the GPU layer's methods (per launch, graph batch, back to
// back) on an AMD GPU. All need one ([gpu]) and skip without; here they only compile (no AMD GPU).

#include <cstddef>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cotune/hip/hip.hpp>

#include "../support/temp_dir.hpp"

namespace hip = cotune::hip;

static_assert(cotune::ReportsMeasurement<hip::hip_benchmarker>);

namespace {

const cotune::kernel_source bump{.name = "bench_bump",
                                 .code = "extern \"C\" __global__ void bench_bump(int* x) { if (threadIdx.x == 0) "
                                         "x[blockIdx.x] += 1; }\n",
                                 .entry = "bench_bump"};

} // namespace

TEST_CASE("a HIP kernel is timed per launch, in graph batches or back to back, as the options say",
          "[hip][hip_benchmarker][gpu]") {
  const auto devices = hip::devices();
  if (devices.empty()) {
    WARN("skipped: no HIP device here (" << hip::availability().message << ")");
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const hip::hip_backend backend;
  const auto c = cotune::config({}, cotune::launch_options{.num_warps = 1});
  const auto f = backend.load(backend.compile(bump, c, d), bump, c, d);
  const auto& ctx = hip::runtime().context(d.ordinal);
  void* counter = nullptr;
  REQUIRE(ctx.api().malloc(&counter, sizeof(int)) == hip::hip_success);
  auto zero = [&] { ctx.check(ctx.api().memset_d32_async(counter, 0, 1, ctx.stream()), "zero"); };
  auto ran = [&] {
    int v = 0;
    ctx.check(ctx.api().memcpy_dtoh_async(&v, counter, sizeof v, ctx.stream()), "read back");
    backend.synchronize(d);
    return static_cast<std::size_t>(v);
  };
  std::size_t launches = 0;
  auto fn = [&] {
    backend.launch(f, cotune::launch_grid{.x = 1}, counter);
    ++launches;
  };
  const cotune::bench_options opts{.warmup_ms = 1, .rep_ms = 10, .quantiles = {0.5, 0.2, 0.8}};

  zero();
  launches = 0;
  hip::hip_benchmarker per_launch(backend, d, hip::hip_bench_options{.batch_below_us = 0.0});
  auto m = per_launch.measure(fn, opts);
  CHECK(m.method == "per-launch");
  CHECK(launches == 1 + 5 + m.warmup_runs + m.samples);
  CHECK(ran() == launches);

  zero();
  launches = 0;
  hip::hip_benchmarker graph(backend, d, hip::hip_bench_options{.graph = true});
  m = graph.measure(fn, opts);
  REQUIRE(m.times.size() == 3);
  CHECK(m.method == fmt::format("graph-batch x{}", m.batch));
  CHECK(ran() >= 1 + 5 + m.warmup_runs + m.samples * m.batch);

  zero();
  launches = 0;
  auto plain = opts;
  plain.capturable = false;
  m = graph.measure(fn, plain);
  CHECK(m.method == fmt::format("back-to-back x{}", m.batch));
  CHECK(launches == 1 + 5 + m.warmup_runs + m.samples * m.batch);
  CHECK(ran() == launches);
  (void)ctx.api().free(counter);
}
