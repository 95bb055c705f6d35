// Tests for cotune/core/buffer.hpp: the Buffer concept, host_span and kernel_arg.

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cotune/core/buffer.hpp>

using cotune::host_span;

namespace {

struct custom_element {
  static constexpr std::string_view cotune_type_name = "custom";
};

constexpr bool type_names() {
  using cotune::element_type_name;
  return element_type_name<float>() == "float32" && element_type_name<const double>() == "float64" &&
         element_type_name<std::int8_t>() == "int8" && element_type_name<std::uint8_t>() == "uint8" &&
         element_type_name<std::int16_t>() == "int16" && element_type_name<std::uint16_t>() == "uint16" &&
         element_type_name<std::int32_t>() == "int32" && element_type_name<std::uint32_t>() == "uint32" &&
         element_type_name<std::int64_t>() == "int64" && element_type_name<std::uint64_t>() == "uint64" &&
         element_type_name<bool>() == "bool" && element_type_name<custom_element>() == "custom" &&
         element_type_name<std::array<char, 3>>() == "bytes";
}

constexpr bool kernel_arg_passes_plain_values() {
  int n = 3;
  return &cotune::kernel_arg(n) == &n && cotune::kernel_arg(n) == 3;
}

/// A user buffer that opts in by shape, not by inheritance.
struct counted_buffer {
  using snapshot_type = int;
  int value = 0;
  int zeroed = 0;
  [[nodiscard]] std::size_t size() const { return 1; }
  [[nodiscard]] std::string_view element_type_name() const { return "int32"; }
  void zero() {
    value = 0;
    ++zeroed;
  }
  [[nodiscard]] int snapshot() const { return value; }
  void restore(int v) { value = v; }
};

} // namespace

static_assert(cotune::Buffer<host_span<float>>);
static_assert(cotune::Buffer<host_span<std::int64_t>>);
static_assert(cotune::Buffer<counted_buffer>);
static_assert(!cotune::Buffer<int>);
static_assert(!cotune::Buffer<std::vector<float>>);
static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<host_span<float>&>())), float*>);
static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<int&>())), int&>);

TEST_CASE("element type names are fixed words", "[core][buffer]") {
  static_assert(type_names());
  CHECK(type_names());
}

TEST_CASE("kernel_arg passes arguments that are not buffers through", "[core][buffer]") {
  static_assert(kernel_arg_passes_plain_values());
  CHECK(kernel_arg_passes_plain_values());
}

TEST_CASE("a host span views a container and decays to its pointer", "[core][buffer]") {
  std::vector<float> v{1, 2, 3};
  host_span span(v); // deduction guide: host_span<float>
  static_assert(std::is_same_v<decltype(span), host_span<float>>);
  CHECK(span.data() == v.data());
  CHECK(span.size() == 3);
  CHECK(span.element_type_name() == "float32");
  CHECK(span.kernel_arg() == v.data());
  CHECK(cotune::kernel_arg(span) == v.data());

  std::array<std::int32_t, 2> a{7, 8};
  host_span<std::int32_t> from_array(a);
  CHECK(from_array.size() == 2);
  CHECK(from_array.element_type_name() == "int32");

  host_span<double> empty;
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);
}

TEST_CASE("a host span zeroes, snapshots and restores the memory it views", "[core][buffer]") {
  std::vector<int> v{1, 2, 3, 4};
  host_span<int> span(v.data() + 1, 2); // only the middle two
  const auto snap = span.snapshot();
  CHECK(snap == std::vector<int>{2, 3});
  span.zero();
  CHECK(v == std::vector<int>{1, 0, 0, 4});
  span.restore(snap);
  CHECK(v == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("a user buffer satisfies the concept by its members", "[core][buffer]") {
  counted_buffer b{.value = 5};
  const auto snap = b.snapshot();
  b.zero();
  CHECK(b.value == 0);
  CHECK(b.zeroed == 1);
  b.restore(snap);
  CHECK(b.value == 5);
  CHECK(&cotune::kernel_arg(b) == &b); // no kernel_arg(): passed as itself
}

TEST_CASE("standard contiguous ranges are buffers through as_buffer", "[core][buffer][range]") {
  static_assert(cotune::HostRange<std::span<float>> && cotune::HostRange<std::span<const float>>);
  static_assert(cotune::HostRange<std::vector<int>> && cotune::HostRange<std::array<double, 4>>);
  static_assert(!cotune::HostRange<std::string> && !cotune::HostRange<cotune::host_span<float>>);
  static_assert(!cotune::HostRange<int> && !cotune::HostRange<std::vector<std::string>>);
  static_assert(cotune::is_writable_buffer<std::vector<float>> && cotune::is_writable_buffer<std::span<float>>);
  static_assert(!cotune::is_writable_buffer<std::span<const float>>);
  static_assert(!cotune::is_writable_buffer<cotune::host_span<const float>>);
  static_assert(!cotune::is_writable_buffer<int>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<std::vector<float>&>())), float*>);
  static_assert(std::is_same_v<decltype(cotune::kernel_arg(std::declval<std::span<const int>&>())), const int*>);

  std::vector<float> v{1, 2, 3};
  auto b = cotune::as_buffer(v);
  static_assert(std::is_same_v<decltype(b), cotune::host_span<float>>);
  CHECK(b.size() == 3);
  CHECK(b.element_type_name() == "float32");
  const auto snap = b.snapshot();
  b.zero();
  CHECK(v == std::vector<float>{0, 0, 0});
  b.restore(snap);
  CHECK(v == std::vector<float>{1, 2, 3});

  std::array<std::int64_t, 2> a{7, 8};
  cotune::as_buffer(a).zero();
  CHECK(a == std::array<std::int64_t, 2>{0, 0});
  const std::span<const std::int64_t> ro(a);
  CHECK(cotune::as_buffer(ro).element_type_name() == "int64");
  CHECK_THROWS_WITH(b.restore(std::vector<float>{1}), Catch::Contains("snapshot holds 1 elements"));
}
