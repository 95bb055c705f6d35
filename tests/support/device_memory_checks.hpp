#pragma once
// The GPU layer's device memory (gpu/device_memory.hpp) checked the same way on every runtime: each
// function takes a real device of that runtime and uses Catch2 assertions. tests/cuda/test_device_buffer.cpp
// and tests/hip/test_device_buffer.cpp call them ([gpu] tests, skipped without a device).

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/core/errors.hpp>
#include <cotune/gpu/device_memory.hpp>

namespace cotune_test {

/// Copies to and from the host round-trip, whole and through a subspan; size mismatches are errors.
template <class R>
void check_round_trip(const typename R::device& d) {
  std::vector<std::int32_t> host(100000);
  std::iota(host.begin(), host.end(), -50);
  cotune::gpu::device_buffer<R, std::int32_t> buf(d, host);
  CHECK(buf.size() == host.size());
  CHECK(buf.size_bytes() == host.size() * 4);
  CHECK(buf.ordinal() == d.ordinal);
  CHECK(buf.to_vector() == host);
  CHECK(buf.span().subspan(10, 5).to_vector() == std::vector<std::int32_t>(host.begin() + 10, host.begin() + 15));
  std::vector<std::int32_t> wrong(3);
  CHECK_THROWS_AS(buf.copy_to(wrong), cotune::error);
  CHECK_THROWS_AS(buf.copy_from(wrong), cotune::error);
}

/// zero() clears exactly its span, of any byte length (an odd one takes the byte-wise memset).
template <class R>
void check_zero(const typename R::device& d) {
  std::vector<std::uint8_t> bytes(1001, 0xab);
  cotune::gpu::device_buffer<R, std::uint8_t> b(d, bytes);
  b.span().subspan(1, 999).zero();
  auto got = b.to_vector();
  CHECK(got.front() == 0xab);
  CHECK(got.back() == 0xab);
  CHECK(std::all_of(got.begin() + 1, got.end() - 1, [](std::uint8_t v) { return v == 0; }));

  std::vector<float> floats(4096, 3.5f);
  cotune::gpu::device_buffer<R, float> f(d, floats);
  f.zero();
  CHECK(f.to_vector() == std::vector<float>(4096, 0.0f));
}

/// snapshot() is its own device copy and restore() puts it back; a snapshot of another size is refused.
template <class R>
void check_snapshot_restore(const typename R::device& d) {
  std::vector<float> original(12345);
  std::iota(original.begin(), original.end(), 1.0f);
  cotune::gpu::device_buffer<R, float> buf(d, original);
  cotune::gpu::device_span<R, float> span = buf;
  auto snap = span.snapshot();
  CHECK(snap.size() == original.size());
  span.zero();
  CHECK(buf.to_vector() == std::vector<float>(original.size(), 0.0f));
  span.restore(snap);
  CHECK(buf.to_vector() == original);
  CHECK(snap.to_vector() == original);

  cotune::gpu::device_buffer<R, float> other(d, 10);
  CHECK_THROWS_AS(other.restore(snap), cotune::error);
}

/// A buffer moves its memory (the moved-from one is empty) and frees it once.
template <class R>
void check_move(const typename R::device& d) {
  cotune::gpu::device_buffer<R, float> a(d, std::vector<float>{1, 2, 3});
  const auto address = a.data();
  cotune::gpu::device_buffer<R, float> b = std::move(a);
  CHECK(b.data() == address);
  CHECK(!a.data()); // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  CHECK(a.size() == 0);
  a = std::move(b);
  CHECK(a.to_vector() == std::vector<float>{1, 2, 3});
}

} // namespace cotune_test
