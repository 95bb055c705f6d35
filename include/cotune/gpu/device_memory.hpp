#pragma once
/// \file `gpu::device_buffer<R, T>` (owning) and `gpu::device_span<R, T>` (non-owning): device memory
/// that knows its size and element type, over one runtime's memory calls `R`. Each runtime names
/// them: `cuda::device_buffer<T>` and `hip::device_buffer<T>` (and their spans) are these templates
/// with its own `R`. Both satisfy `cotune::Buffer`, so reset_to_zero and restore_value work on them
/// and the tuning key sees their element type, and a kernel receives their device address.
///
/// Every operation goes to the device's cotune stream, in order with cotune's launches on it: a
/// `zero()` before a launch happens before the kernel runs. Copies to and from the host wait for the
/// stream.
///
/// What a runtime `R` provides (cuda/device_buffer.hpp and hip/device_buffer.hpp are the two):
///
///     using context = ...;                      // one device and its stream
///     using device = ...;                       // a device description with `.ordinal`
///     using pointer = ...;                      // a device address (an integer, or void*)
///     static constexpr std::string_view name;   // "CUDA", "HIP": for messages
///     static const context& context_of(int ordinal);
///     static bool allocate(const context&, pointer*, std::size_t bytes);   // false: out of memory
///     static void release(const context&, pointer) noexcept;
///     static void zero(const context&, pointer, std::size_t bytes);
///     static void fill32(const context&, pointer, std::uint32_t value, std::size_t words);
///     static void copy(const context&, pointer to, pointer from, std::size_t bytes);
///     static void upload(const context&, pointer to, const void* from, std::size_t bytes);  // waits
///     static void download(const context&, void* to, pointer from, std::size_t bytes);      // waits

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>

namespace cotune::gpu {

/// A runtime's device-memory calls (see the file comment).
template <class R>
concept DeviceMemoryRuntime = requires(const typename R::context& c, typename R::pointer p, std::size_t n, void* h) {
  { R::name } -> std::convertible_to<std::string_view>;
  { R::context_of(0) } -> std::same_as<const typename R::context&>;
  { R::allocate(c, &p, n) } -> std::same_as<bool>;
  R::release(c, p);
  R::zero(c, p, n);
  R::fill32(c, p, std::uint32_t{0}, n);
  R::copy(c, p, p, n);
  R::upload(c, p, static_cast<const void*>(h), n);
  R::download(c, h, p, n);
  { c.ordinal() } -> std::convertible_to<int>;
};

namespace detail {
/// `p` advanced by `bytes`, for an integer address or a void*.
template <class P>
[[nodiscard]] P advance(P p, std::size_t bytes) noexcept {
  if constexpr (std::is_pointer_v<P>) return p ? static_cast<P>(static_cast<std::byte*>(p) + bytes) : p;
  else return p + static_cast<P>(bytes);
}
/// A pointer the caller's runtime API returned (`T*`), as a device address `P` (an integer or a void*).
template <class P>
[[nodiscard]] P address_from(const volatile void* p) noexcept {
  if constexpr (std::is_pointer_v<P>) return const_cast<P>(p);
  else return reinterpret_cast<P>(p);
}
/// Device address `p` (an integer or a void*) as a number.
template <class P>
[[nodiscard]] std::uint64_t address_value(P p) noexcept {
  if constexpr (std::is_pointer_v<P>) return reinterpret_cast<std::uintptr_t>(p);
  else return static_cast<std::uint64_t>(p);
}
/// Whether address `p` (an integer address or a void*) is a multiple of 4.
template <class P>
[[nodiscard]] bool aligned_to_4(P p) noexcept {
  if constexpr (std::is_pointer_v<P>) return reinterpret_cast<std::uintptr_t>(p) % 4 == 0;
  else return static_cast<std::uint64_t>(p) % 4 == 0;
}
} // namespace detail

template <class R, class T>
class device_buffer;

namespace detail {
/// What a span and a buffer both are: `size()` elements of T at a device address in one context.
template <class R, class T>
class device_memory {
public:
  using runtime = R;
  using context_type = typename R::context;
  using pointer = typename R::pointer;
  using element_type = T;

  [[nodiscard]] pointer data() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return cotune::element_type_name<T>(); }
  /// The device's context (null for a default-constructed one).
  [[nodiscard]] const context_type* context() const noexcept { return context_; }
  [[nodiscard]] int ordinal() const noexcept { return context_ ? context_->ordinal() : -1; }
  /// What a kernel receives.
  [[nodiscard]] pointer kernel_arg() const noexcept { return ptr_; }

protected:
  device_memory() = default;
  device_memory(const context_type* ctx, pointer ptr, std::size_t size) noexcept : context_(ctx), ptr_(ptr), size_(size) {}

  const context_type* context_ = nullptr;
  pointer ptr_{};
  std::size_t size_ = 0;
};
} // namespace detail

/// A non-owning view of `size()` elements of type T in one device's memory. Passed to a kernel it
/// becomes the device address (declare the parameter as `T*`).
template <class R, class T>
class device_span : public detail::device_memory<R, T> {
  static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable elements only");
  using base = detail::device_memory<R, T>;
  using base::context_, base::ptr_, base::size_;

public:
  using typename base::context_type;
  using typename base::pointer;
  using value_type = std::remove_cv_t<T>;
  /// A device-side copy, made by `snapshot()`.
  using snapshot_type = device_buffer<R, value_type>;

  device_span() = default;
  device_span(const context_type& ctx, pointer ptr, std::size_t size) noexcept : base(&ctx, ptr, size) {}
  /// A read-only view of a writable span.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  device_span(const device_span<R, U>& s) noexcept // NOLINT(google-explicit-constructor)
      : base(s.context(), s.data(), s.size()) {}

  /// Elements [offset, offset + count).
  [[nodiscard]] device_span subspan(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset)
      throw error(fmt::format("device_span::subspan({}, {}) is out of range for {} elements", offset, count, size_));
    return context_ ? device_span(*context_, detail::advance(ptr_, offset * sizeof(T)), count) : device_span();
  }

  /// Sets every byte to 0 (queued on the device's stream). A span of const elements is still a
  /// Buffer (its element type and extent enter tuning keys) but has no zero(): it does not compile.
  void zero() const
    requires(!std::is_const_v<T>)
  {
    if (context_ && size_) R::zero(*context_, ptr_, this->size_bytes());
  }
  /// Sets every whole 32-bit word to 0xFFFFFFFF before a verification run (queued on the device's
  /// stream; see tune_options::verify): a NaN in float16, bfloat16, float32 and float64, -1 in signed
  /// integers. A span that does not start on a 4-byte boundary is left as it is.
  void poison() const
    requires(!std::is_const_v<T>)
  {
    if (context_ && size_ && detail::aligned_to_4(ptr_))
      R::fill32(*context_, ptr_, 0xFFFFFFFFu, this->size_bytes() / 4);
  }
  /// A device-side copy of the contents (queued on the device's stream).
  [[nodiscard]] snapshot_type snapshot() const {
    if (!context_) return {};
    snapshot_type copy(*context_, size_);
    if (size_) R::copy(*context_, copy.data(), ptr_, this->size_bytes());
    return copy;
  }
  /// Puts back what `snapshot()` copied (queued on the device's stream; not for const elements).
  void restore(const snapshot_type& s) const
    requires(!std::is_const_v<T>)
  {
    if (s.size() != size_)
      throw error(fmt::format("device_span::restore: the snapshot holds {} elements, the span {}", s.size(), size_));
    if (context_ && size_) R::copy(*context_, ptr_, s.data(), this->size_bytes());
  }

  /// Copies `host` into the span (sizes must match) and waits for the copy.
  void copy_from(std::span<const value_type> host) const
    requires(!std::is_const_v<T>)
  {
    if (host.size() != size_)
      throw error(fmt::format("device_span::copy_from: {} host elements for a span of {}", host.size(), size_));
    if (context_ && size_) R::upload(*context_, ptr_, host.data(), this->size_bytes());
  }
  /// Copies the span into `host` (sizes must match), waiting for earlier work on the stream.
  void copy_to(std::span<value_type> host) const {
    if (host.size() != size_)
      throw error(fmt::format("device_span::copy_to: {} host elements for a span of {}", host.size(), size_));
    if (context_ && size_) R::download(*context_, host.data(), ptr_, this->size_bytes());
  }
  /// The contents, copied to the host.
  [[nodiscard]] std::vector<value_type> to_vector() const {
    std::vector<value_type> out(size_);
    copy_to(out);
    return out;
  }
};

/// `size()` elements of type T in one device's memory, freed on destruction. Move-only. Allocation
/// leaves the contents uninitialised (call `zero()` or `copy_from()`).
template <class R, class T>
class device_buffer : public detail::device_memory<R, T> {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "a device_buffer holds mutable, trivially copyable elements");
  using base = detail::device_memory<R, T>;
  using base::context_, base::ptr_, base::size_;

public:
  using typename base::context_type;
  using typename base::pointer;
  using value_type = T;
  using snapshot_type = device_buffer;

  device_buffer() = default;
  /// Allocates `size` elements on `d`.
  device_buffer(const typename R::device& d, std::size_t size) : device_buffer(R::context_of(d.ordinal), size) {}
  /// Allocates room for `host` on `d` and copies it there.
  device_buffer(const typename R::device& d, std::span<const T> host) : device_buffer(d, host.size()) {
    span().copy_from(host);
  }
  device_buffer(const typename R::device& d, const std::vector<T>& host) : device_buffer(d, std::span<const T>(host)) {}
  /// Allocates `size` elements in `ctx`'s device.
  device_buffer(const context_type& ctx, std::size_t size) : base(&ctx, pointer{}, size) {
    if (size == 0) return;
    if (!R::allocate(ctx, &ptr_, size * sizeof(T)))
      throw error(fmt::format("device_buffer: cannot allocate {} bytes ({} x {}) on {} device {}: out of memory",
                              size * sizeof(T), size, cotune::element_type_name<T>(), R::name, ctx.ordinal()));
  }

  device_buffer(device_buffer&& o) noexcept
      : base(std::exchange(o.context_, nullptr), std::exchange(o.ptr_, pointer{}), std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      context_ = std::exchange(o.context_, nullptr);
      ptr_ = std::exchange(o.ptr_, pointer{});
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { release(); }

  [[nodiscard]] device_span<R, T> span() const noexcept {
    return context_ ? device_span<R, T>(*context_, ptr_, size_) : device_span<R, T>();
  }
  operator device_span<R, T>() const noexcept { return span(); }       // NOLINT(google-explicit-constructor)
  operator device_span<R, const T>() const noexcept { return span(); } // NOLINT(google-explicit-constructor)

  void zero() { span().zero(); }
  [[nodiscard]] snapshot_type snapshot() const { return span().snapshot(); }
  void restore(const snapshot_type& s) { span().restore(s); }
  void copy_from(std::span<const T> host) { span().copy_from(host); }
  void copy_to(std::span<T> host) const { span().copy_to(host); }
  [[nodiscard]] std::vector<T> to_vector() const { return span().to_vector(); }

private:
  void release() noexcept {
    if (!ptr_) return;
    R::release(*context_, ptr_); // errors ignored: after a sticky error the memory goes with the context
    ptr_ = pointer{};
  }
};

/// Views `count` elements of device memory the caller already has at `ptr` (from its runtime's
/// allocator, a framework's tensor) on device `ordinal`; each runtime's `device_view` is this.
template <class R, class T>
[[nodiscard]] device_span<R, T> device_view(T* ptr, std::size_t count, int ordinal) {
  return device_span<R, T>(R::context_of(ordinal), detail::address_from<typename R::pointer>(ptr), count);
}

} // namespace cotune::gpu
