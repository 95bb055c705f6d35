#pragma once
/// \file The `Buffer` concept: kernel arguments that own data the autotuner must know about.
///
/// A buffer argument adds its element type and extent to the tuning key, and can be zeroed
/// (reset_to_zero) and snapshotted and restored (restore_value) around benchmark runs.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cotune/core/errors.hpp>

namespace cotune {

/// A buffer: element count, element type name, zeroing, and snapshot/restore.
template <class B>
concept Buffer = requires(B& b, const B& cb, const typename B::snapshot_type& snap) {
  typename B::snapshot_type;
  { cb.size() } -> std::convertible_to<std::size_t>;
  { cb.element_type_name() } -> std::convertible_to<std::string_view>;
  b.zero();
  { cb.snapshot() } -> std::same_as<typename B::snapshot_type>;
  b.restore(snap);
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
  /// Zeroes the elements (a read-only span refuses: it cannot be used in reset_to_zero).
  void zero() const {
    if constexpr (std::is_const_v<T>) throw error("cotune::host_span: cannot zero a span of const elements");
    else std::fill(data_, data_ + size_, T{});
  }
  [[nodiscard]] snapshot_type snapshot() const { return snapshot_type(data_, data_ + size_); }
  void restore(const snapshot_type& s) const {
    if constexpr (std::is_const_v<T>) throw error("cotune::host_span: cannot restore a span of const elements");
    else std::copy(s.begin(), s.end(), data_);
  }
  /// What a host kernel receives.
  [[nodiscard]] T* kernel_arg() const noexcept { return data_; }

private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class Container>
host_span(Container&) -> host_span<std::remove_reference_t<decltype(*std::declval<Container&>().data())>>;

static_assert(Buffer<host_span<float>>);

/// What a kernel receives for an argument: `a.kernel_arg()` for buffers that define it (a host span
/// gives its pointer, a device span its device address), the argument itself otherwise.
template <class A>
[[nodiscard]] constexpr decltype(auto) kernel_arg(A& a) noexcept {
  if constexpr (requires { a.kernel_arg(); }) return a.kernel_arg();
  else return (a);
}

} // namespace cotune
