#pragma once
/// \file The `Buffer` concept: kernel arguments that own data the autotuner must know about.
///
/// A buffer argument adds its element type and extent to the tuning key, and a writable one can be
/// zeroed (reset_to_zero) and snapshotted and restored (restore_value) around benchmark runs.
///
/// Besides the buffer types (host_span, cuda::device_span, ...), a host kernel may take any contiguous
/// range of trivially copyable elements: `std::span<T>` by value, or `std::vector<T>&` and
/// `std::array<T, N>&` by reference (by value they would be copies). Such a range is a buffer through
/// `as_buffer`, which views it as a host_span.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>

namespace cotune {

/// A buffer: element count, element type name and a snapshot of its contents. A view of const
/// elements is a buffer (its type and extent enter tuning keys) but not a writable one.
template <class B>
concept Buffer = requires(const B& cb) {
  typename B::snapshot_type;
  { cb.size() } -> std::convertible_to<std::size_t>;
  { cb.element_type_name() } -> std::convertible_to<std::string_view>;
  { cb.snapshot() } -> std::same_as<typename B::snapshot_type>;
};

/// A buffer that can be zeroed (reset_to_zero) and restored from a snapshot (restore_value).
template <class B>
concept WritableBuffer = Buffer<B> && requires(B& b, const typename B::snapshot_type& snap) {
  b.zero();
  b.restore(snap);
};

/// A buffer that checks itself when a call passes it, so that its error can name the argument: a
/// DLPack tensor (cotune/dlpack/) finds its faults (device, element type, layout) when it is made and
/// reports them from `b.check_argument(kernel, position, name)`, which the tuner calls on every call
/// (make it cheap: one test of a flag when the buffer is fine).
template <class B>
concept CheckedBuffer = Buffer<B> && requires(const B& cb, std::string_view s, std::size_t i) {
  cb.check_argument(s, i, s);
};

/// A buffer bound to one GPU (a DLPack tensor on a device): `b.device_ordinal()` is the runtime's
/// index of that device, and the tuner refuses it for a kernel that runs on another device.
template <class B>
concept DeviceBoundBuffer = Buffer<B> && requires(const B& cb) {
  { cb.device_ordinal() } -> std::convertible_to<int>;
};

/// Name of an element type in keys and messages ("float32", "int64", ...).
template <class T>
[[nodiscard]] constexpr std::string_view element_type_name() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return "float32";
  else if constexpr (std::is_same_v<U, double>) return "float64";
  else if constexpr (std::is_same_v<U, std::int8_t>) return "int8";
  else if constexpr (std::is_same_v<U, std::uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<U, std::int16_t>) return "int16";
  else if constexpr (std::is_same_v<U, std::uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<U, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<U, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<U, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<U, std::uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<U, bool>) return "bool";
  else if constexpr (requires { U::cotune_type_name; }) return U::cotune_type_name;
  else return "bytes" ;
}

/// A host buffer: a non-owning view of CPU memory. Passed to a host kernel it decays to `T*`.
template <class T>
class host_span {
public:
  using element_type = T;
  using snapshot_type = std::vector<std::remove_cv_t<T>>;

  host_span() = default;
  host_span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <class Container>
    requires requires(Container& c) { { c.data() } -> std::convertible_to<T*>; c.size(); }
  host_span(Container& c) noexcept : data_(c.data()), size_(c.size()) {} // NOLINT(google-explicit-constructor)

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return cotune::element_type_name<T>(); }
  /// Zeroes the elements (not for a span of const elements: that does not compile).
  void zero() const
    requires(!std::is_const_v<T>)
  {
    std::fill(data_, data_ + size_, T{});
  }
  /// Sets every byte to 0xFF before a verification run (see tune_options::verify): a NaN in every
  /// floating-point type, -1 in signed integers, so that a candidate that writes nothing is seen.
  void poison() const
    requires(!std::is_const_v<T> && !std::is_same_v<std::remove_cv_t<T>, bool>)
  {
    std::memset(static_cast<void*>(data_), 0xFF, size_ * sizeof(T));
  }
  [[nodiscard]] snapshot_type snapshot() const { return snapshot_type(data_, data_ + size_); }
  void restore(const snapshot_type& s) const
    requires(!std::is_const_v<T>)
  {
    if (s.size() != size_)
      throw error(fmt::format("host_span::restore: the snapshot holds {} elements, the span {}", s.size(), size_));
    std::copy(s.begin(), s.end(), data_);
  }
  /// What a host kernel receives.
  [[nodiscard]] T* kernel_arg() const noexcept { return data_; }

private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class Container>
host_span(Container&) -> host_span<std::remove_reference_t<decltype(*std::declval<Container&>().data())>>;

static_assert(WritableBuffer<host_span<float>>);
static_assert(Buffer<host_span<const float>> && !WritableBuffer<host_span<const float>>);

namespace detail {
/// The element type of a contiguous range `R` (what std::ranges::data points to), const if `R` is.
template <class R>
using host_element_t = std::remove_reference_t<decltype(*std::ranges::data(std::declval<R&>()))>;
} // namespace detail

/// A contiguous range of trivially copyable elements in host memory that is not itself a Buffer:
/// `std::span<T>`, `std::vector<T>`, `std::array<T, N>` (strings are left out: they are text).
/// Written over std::ranges::data and std::ranges::size, which <iterator> provides, and not over
/// <ranges>' concepts: every file that includes cotune would compile <ranges> for this one check.
template <class R>
concept HostRange = !Buffer<R> && requires(R& r) { std::ranges::data(r), std::ranges::size(r); } &&
                    std::is_trivially_copyable_v<std::remove_cv_t<detail::host_element_t<R>>> &&
                    !std::is_convertible_v<const R&, std::string_view>;

/// A Buffer, or a HostRange that `as_buffer` views as one.
template <class A>
concept AnyBuffer = Buffer<A> || HostRange<A>;

/// The buffer `a` is: itself, or a host_span over a host range.
template <class A>
  requires AnyBuffer<std::remove_const_t<A>>
[[nodiscard]] constexpr decltype(auto) as_buffer(A& a) noexcept {
  if constexpr (Buffer<std::remove_const_t<A>>) return (a);
  else return host_span<detail::host_element_t<A>>(std::ranges::data(a), std::ranges::size(a));
}

/// True when reset_to_zero and restore_value may name an argument of type A (a writable buffer, or a
/// host range of mutable elements).
template <class A>
inline constexpr bool is_writable_buffer = [] {
  if constexpr (Buffer<A>) return WritableBuffer<A>;
  else if constexpr (HostRange<A>) return !std::is_const_v<detail::host_element_t<A>>;
  else return false;
}();

/// What a kernel receives for an argument: `a.kernel_arg()` for buffers that define it (a host span
/// gives its pointer, a device span its device address), a host range's data pointer, the argument
/// itself otherwise.
template <class A>
[[nodiscard]] constexpr decltype(auto) kernel_arg(A& a) noexcept {
  if constexpr (requires { a.kernel_arg(); }) return a.kernel_arg();
  else if constexpr (HostRange<std::remove_const_t<A>>) return std::ranges::data(a);
  else return (a);
}

} // namespace cotune
