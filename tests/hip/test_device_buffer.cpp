// Tests of cotune::hip::device_buffer and device_span (the GPU layer's device memory over HIP). The
// type-level properties, the message without a device, and a HIP tuner that zeroes a device buffer
// (compiled here: the buffer flows through the autotuner's reset_to_zero) run everywhere; memory
// operations are [gpu] tests that need an AMD GPU and skip without one (this project's CI has none).

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/core/buffer.hpp>
#include <cotune/hip/hip.hpp>
#include <cotune/tune/autotuner.hpp>

#include "../support/device_memory_checks.hpp"
#include "../support/temp_dir.hpp"

namespace hip = cotune::hip;

namespace {

std::optional<hip::device> first_gpu() {
  auto all = hip::devices();
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string skip_reason() { return "skipped: no HIP device here (" + hip::availability().message + ")"; }

} // namespace

TEST_CASE("HIP device spans and buffers are Buffers that pass their device address", "[hip][device_buffer]") {
  static_assert(cotune::Buffer<hip::device_span<float>>);
  static_assert(cotune::WritableBuffer<hip::device_buffer<std::int32_t>>);
  static_assert(cotune::Buffer<hip::device_span<const float>> && !cotune::WritableBuffer<hip::device_span<const float>>);
  static_assert(std::is_same_v<hip::device_span<float>::snapshot_type, hip::device_buffer<float>>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<hip::device_span<float>&>())), void*>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<hip::device_buffer<float>&>())), void*>);
  static_assert(!std::is_copy_constructible_v<hip::device_buffer<float>>);
  static_assert(std::is_nothrow_move_constructible_v<hip::device_buffer<float>>);
  // One template, two runtimes: a HIP span is not a CUDA one.
  static_assert(std::is_same_v<hip::device_span<float>, cotune::gpu::device_span<hip::memory_runtime, float>>);

  hip::device_span<float> empty;
  CHECK(empty.size() == 0);
  CHECK(empty.data() == nullptr);
  CHECK(empty.element_type_name() == "float32");
  CHECK(hip::device_buffer<double>().element_type_name() == "float64");
  CHECK(empty.ordinal() == -1);
  empty.zero(); // harmless without a device
  CHECK(empty.to_vector().empty());
  CHECK_THROWS_WITH(empty.subspan(0, 1), Catch::Contains("out of range for 0 elements"));
}

TEST_CASE("a HIP device buffer without a device says why", "[hip][device_buffer]") {
  if (first_gpu()) return; // the [gpu] cases below cover a machine with one
  try {
    hip::device_buffer<float> b(hip::device{.ordinal = 0}, 16);
    FAIL("allocated on a machine without a HIP device");
  } catch (const cotune::error& e) {
    const std::string what = e.what();
    INFO(what);
    // The runtime is missing, or it loaded and reports no device (Debian's libamdhip64 without a GPU).
    CHECK((what.find("HIP device 0 does not exist") != std::string::npos ||
           what.find("libamdhip64") != std::string::npos));
  }
}

TEST_CASE("HIP device memory round-trips, zeroes, snapshots and moves", "[hip][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::check_round_trip<hip::memory_runtime>(*d);
  cotune_test::check_zero<hip::memory_runtime>(*d);
  cotune_test::check_snapshot_restore<hip::memory_runtime>(*d);
  cotune_test::check_move<hip::memory_runtime>(*d);
}

TEST_CASE("hipMalloc'd memory is wrapped by device_view and never freed by cotune", "[hip][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  const auto& ctx = hip::runtime().context(d->ordinal);
  ctx.make_current();
  void* raw = nullptr;
  REQUIRE(ctx.api().malloc(&raw, 100 * sizeof(int)) == hip::hip_success);
  {
    auto view = hip::device_view(static_cast<int*>(raw), 100, *d);
    static_assert(std::is_same_v<decltype(view), hip::device_span<int>>);
    std::vector<int> host(100, 7);
    view.copy_from(host);
    const auto snap = view.snapshot();
    view.zero();
    CHECK(view.to_vector() == std::vector<int>(100, 0));
    view.restore(snap);
    CHECK(view.to_vector() == host);
  }
  CHECK(ctx.api().free(raw) == hip::hip_success);
}

namespace {

const cotune::kernel_source count_up{.name = "hip_count_up",
                                     .code = R"(
extern "C" __global__ void hip_count_up(int* counts, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counts[i] += 1;
}
)",
                                     .entry = "hip_count_up"};

using count_tuner = cotune::autotuner<void(hip::device_span<int>, int), hip::hip_backend>;

} // namespace

TEST_CASE("a HIP tuner zeroes a device buffer named in reset_to_zero before every run", "[hip][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const int n = 4096;
  std::vector<cotune::config> configs;
  for (int warps : {1, 2, 4}) configs.emplace_back(cotune::config({}, cotune::launch_options{.num_warps = warps}));
  count_tuner tuner{count_up, configs,
                    {.arg_names = {"counts", "n"},
                     .key = {"n"},
                     .reset_to_zero = {"counts"},
                     .grid = [&](const cotune::config& c, const hip::device_span<int>&, const int& len) {
                       const int threads = c.launch().num_warps * d->warp_size;
                       return cotune::launch_grid{.x = static_cast<unsigned>((len + threads - 1) / threads)};
                     }}};
  hip::device_buffer<int> counts(*d, std::vector<int>(n, 41));
  tuner(counts.span(), n); // tunes: every benchmark run starts from zero, so one count per element
  CHECK(counts.to_vector() == std::vector<int>(n, 1));
}
