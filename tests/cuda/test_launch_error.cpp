// A kernel that writes out of bounds poisons its device's CUDA context for the rest of the process,
// so this test is a program of its own, run last on the GPU. Without a device it skips.

#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/device_buffer.hpp>

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;
using cotune::config;
using cotune::kernel_source;

TEST_CASE("an out-of-bounds write is a launch_error saying the device's context is lost", "[cuda][launch_error][gpu]") {
  auto all = cuda::devices();
  if (all.empty()) {
    WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
    return;
  }
  const auto d = all.front();
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  const kernel_source wild{.name = "wild_write",
                           .code = R"(
extern "C" __global__ void wild_write(float* out) {
  // 2^40 floats past the buffer: far outside any allocation.
  out[(1ull << 40) + threadIdx.x] = 1.0f;
}
)",
                           .entry = "wild_write"};
  const auto c = config({}, cotune::launch_options{.num_warps = 1});
  auto f = backend.load(backend.compile(wild, c, d), wild, c, d);
  cuda::device_buffer<float> out(d, 32);
  cuda::device_span<float> s = out;
  cuda::cuda_benchmarker bench(backend, d);
  try {
    (void)bench.bench([&] { backend.launch(f, cotune::launch_grid{.x = 1}, s); },
                      cotune::bench_options{.warmup_ms = 1, .rep_ms = 5, .quantiles = {0.5, 0.2, 0.8}});
    FAIL("expected a launch_error");
  } catch (const cotune::launch_error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
    CHECK_THAT(e.what(), Catch::Contains("context of device " + std::to_string(d.ordinal) + " is lost"));
    CHECK_THAT(e.what(), Catch::Contains("later candidate"));
    WARN("the message: " << e.what());
  }
  // Every later candidate on that device fails the same way, with the same explanation.
  const kernel_source fine{.name = "fine",
                           .code = "extern \"C\" __global__ void fine(float* out) { out[threadIdx.x] = 2.0f; }\n",
                           .entry = "fine"};
  try {
    auto g = backend.load(backend.compile(fine, c, d), fine, c, d);
    backend.launch(g, cotune::launch_grid{.x = 1}, s);
    backend.synchronize(d);
    FAIL("expected a launch_error");
  } catch (const cotune::launch_error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Catch::Contains("is lost"));
  }
}
