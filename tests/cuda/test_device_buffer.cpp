// Tests of cotune::cuda::device_buffer and device_span. Type-level properties are checked
// everywhere; memory operations are [gpu] tests that skip without a device.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/core/buffer.hpp>
#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/float16.hpp>

#include "../support/device_memory_checks.hpp"

namespace cuda = cotune::cuda;

namespace {

std::optional<cuda::device> first_gpu() {
  auto all = cuda::devices();
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string skip_reason() { return "skipped: no CUDA device here (" + cuda::availability().message + ")"; }

} // namespace

TEST_CASE("device spans and buffers are Buffers that pass their device address", "[cuda][device_buffer]") {
  static_assert(cotune::Buffer<cuda::device_span<float>>);
  static_assert(cotune::Buffer<cuda::device_span<cuda::float16>>);
  static_assert(cotune::Buffer<cuda::device_buffer<std::int32_t>>);
  static_assert(std::is_same_v<cuda::device_span<float>::snapshot_type, cuda::device_buffer<float>>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<cuda::device_span<float>&>())), CUdeviceptr>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<cuda::device_buffer<float>&>())), CUdeviceptr>);
  // A read-only span is a Buffer (its element type and extent enter tuning keys, as host_span<const T>),
  // but has no zero() or restore(): using them does not compile (tests/compile_fail/cuda_span_const_zero.cpp).
  static_assert(cotune::Buffer<cuda::device_span<const float>>);
  static_assert(!cotune::WritableBuffer<cuda::device_span<const float>>);
  static_assert(cotune::WritableBuffer<cuda::device_span<float>>);
  static_assert(!std::is_copy_constructible_v<cuda::device_buffer<float>>);
  static_assert(std::is_nothrow_move_constructible_v<cuda::device_buffer<float>>);

  cuda::device_span<float> empty;
  CHECK(empty.size() == 0);
  CHECK(empty.element_type_name() == "float32");
  CHECK(cuda::device_span<cuda::bfloat16>().element_type_name() == "bfloat16");
  CHECK(cuda::device_buffer<double>().element_type_name() == "float64");
  CHECK(empty.ordinal() == -1);
  empty.zero(); // harmless without a device
  CHECK(empty.to_vector().empty());
  CHECK_THROWS_AS(empty.subspan(0, 1), cotune::error);
}

TEST_CASE("copies to and from the host round-trip", "[cuda][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::check_round_trip<cuda::memory_runtime>(*d);
}

TEST_CASE("zero clears a span, of any byte length", "[cuda][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::check_zero<cuda::memory_runtime>(*d);
}

TEST_CASE("snapshot and restore put back the contents on the device", "[cuda][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::check_snapshot_restore<cuda::memory_runtime>(*d);
}

TEST_CASE("16-bit floats round-trip through device memory", "[cuda][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  std::vector<cuda::float16> h{cuda::float16(1.0f), cuda::float16(-2.5f), cuda::float16(65504.0f)};
  cuda::device_buffer<cuda::float16> buf(*d, h);
  CHECK(buf.to_vector() == h);
  CHECK(buf.element_type_name() == "float16");
}

TEST_CASE("a buffer moves without freeing twice", "[cuda][device_buffer][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::check_move<cuda::memory_runtime>(*d);
}

TEST_CASE("device_view wraps device memory the caller allocated", "[cuda][device_buffer][gpu]") {
  auto all = cuda::devices();
  if (all.empty()) {
    WARN(skip_reason());
    return;
  }
  const auto& d = all.front();
  const auto& ctx = cuda::driver().context(d.ordinal);
  ctx.make_current();
  CUdeviceptr raw = 0;
  REQUIRE(ctx.api().mem_alloc(&raw, 100 * sizeof(int)) == CUDA_SUCCESS);
  {
    auto view = cuda::device_view<int>(raw, 100, d);
    static_assert(std::is_same_v<decltype(view), cuda::device_span<int>>);
    CHECK(view.data() == raw);
    CHECK(view.size() == 100);
    std::vector<int> host(100);
    for (int i = 0; i < 100; ++i) host[std::size_t(i)] = i + 1;
    view.copy_from(host);
    const auto snap = view.snapshot();
    view.zero();
    CHECK(view.to_vector() == std::vector<int>(100, 0));
    view.restore(snap);
    CHECK(view.to_vector() == host);
    // A typed pointer (as cudaMalloc gives) deduces the element type.
    auto typed = cuda::device_view(reinterpret_cast<int*>(raw), 10, d);
    CHECK(typed.to_vector() == std::vector<int>(host.begin(), host.begin() + 10));
  }
  CHECK(ctx.api().mem_free(raw) == CUDA_SUCCESS); // cotune never frees what it only views
}
