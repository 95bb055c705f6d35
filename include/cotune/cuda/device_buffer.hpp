#pragma once
/// \file `cotune::cuda::device_buffer<T>` (owning) and `device_span<T>` (non-owning): device memory
/// that knows its size and element type, so that reset_to_zero and restore_value work on it and the
/// tuning key sees its element type. Both satisfy `cotune::Buffer` and pass their CUdeviceptr to kernels.
///
/// Every operation goes to the device's cotune stream, in order with cotune's launches on it: a
/// `zero()` before a launch happens before the kernel runs. Copies to and from the host wait for
/// the stream.

#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda.h>
#include <fmt/format.h>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/driver_api.hpp>

namespace cotune::cuda {

template <class T>
class device_buffer;

namespace detail {

inline void memset_zero(const device_context& ctx, CUdeviceptr ptr, std::size_t bytes) {
  if (bytes == 0) return;
  ctx.make_current();
  const auto& api = ctx.api();
  // 32-bit stores fill memory faster than byte stores; use them whenever the range allows.
  if (ptr % 4 == 0 && bytes % 4 == 0) ctx.check(api.memset_d32_async(ptr, 0, bytes / 4, ctx.stream()), "cuMemsetD32Async");
  else ctx.check(api.memset_d8_async(ptr, 0, bytes, ctx.stream()), "cuMemsetD8Async");
}

inline void copy_device(const device_context& ctx, CUdeviceptr to, CUdeviceptr from, std::size_t bytes) {
  if (bytes == 0) return;
  ctx.make_current();
  ctx.check(ctx.api().memcpy_dtod_async(to, from, bytes, ctx.stream()), "cuMemcpyDtoDAsync");
}

inline void copy_to_device(const device_context& ctx, CUdeviceptr to, const void* from, std::size_t bytes) {
  if (bytes == 0) return;
  ctx.make_current();
  ctx.check(ctx.api().memcpy_htod_async(to, from, bytes, ctx.stream()), "cuMemcpyHtoDAsync");
  ctx.synchronize("copying to the device"); // the host memory may go away once we return
}

inline void copy_to_host(const device_context& ctx, void* to, CUdeviceptr from, std::size_t bytes) {
  if (bytes == 0) return;
  ctx.make_current();
  ctx.check(ctx.api().memcpy_dtoh_async(to, from, bytes, ctx.stream()), "cuMemcpyDtoHAsync");
  ctx.synchronize("copying to the host");
}

} // namespace detail

/// A non-owning view of `size()` elements of type T in one device's memory. Passed to a kernel it
/// becomes the device address (declare the parameter as `T*`).
template <class T>
class device_span {
  static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable elements only");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  /// A device-side copy, made by `snapshot()`.
  using snapshot_type = device_buffer<value_type>;

  device_span() = default;
  device_span(const device_context& ctx, CUdeviceptr ptr, std::size_t size) noexcept
      : context_(&ctx), ptr_(ptr), size_(size) {}
  /// A read-only view of a writable span.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  device_span(const device_span<U>& s) noexcept // NOLINT(google-explicit-constructor)
      : context_(s.context()), ptr_(s.data()), size_(s.size()) {}

  [[nodiscard]] CUdeviceptr data() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return cotune::element_type_name<T>(); }
  /// The device's context (null for a default-constructed span).
  [[nodiscard]] const device_context* context() const noexcept { return context_; }
  [[nodiscard]] int ordinal() const noexcept { return context_ ? context_->ordinal() : -1; }
  /// What a kernel receives.
  [[nodiscard]] CUdeviceptr kernel_arg() const noexcept { return ptr_; }

  /// Elements [offset, offset + count).
  [[nodiscard]] device_span subspan(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset)
      throw error(fmt::format("device_span::subspan({}, {}) is out of range for {} elements", offset, count, size_));
    return context_ ? device_span(*context_, ptr_ + offset * sizeof(T), count) : device_span();
  }

  /// Sets every byte to 0 (queued on the device's stream). A span of const elements is still a
  /// Buffer (its element type and extent enter tuning keys) but has no zero(): it does not compile.
  void zero() const
    requires(!std::is_const_v<T>)
  {
    if (context_) detail::memset_zero(*context_, ptr_, size_bytes());
  }
  /// A device-side copy of the contents (queued on the device's stream).
  [[nodiscard]] snapshot_type snapshot() const;
  /// Puts back what `snapshot()` copied (queued on the device's stream; not for const elements).
  void restore(const snapshot_type& s) const
    requires(!std::is_const_v<T>);

  /// Copies `host` into the span (sizes must match) and waits for the copy.
  void copy_from(std::span<const value_type> host) const
    requires(!std::is_const_v<T>)
  {
    if (host.size() != size_)
      throw error(fmt::format("device_span::copy_from: {} host elements for a span of {}", host.size(), size_));
    if (context_) detail::copy_to_device(*context_, ptr_, host.data(), size_bytes());
  }
  /// Copies the span into `host` (sizes must match), waiting for earlier work on the stream.
  void copy_to(std::span<value_type> host) const {
    if (host.size() != size_)
      throw error(fmt::format("device_span::copy_to: {} host elements for a span of {}", host.size(), size_));
    if (context_) detail::copy_to_host(*context_, host.data(), ptr_, size_bytes());
  }
  /// The contents, copied to the host.
  [[nodiscard]] std::vector<value_type> to_vector() const {
    std::vector<value_type> out(size_);
    copy_to(out);
    return out;
  }

private:
  const device_context* context_ = nullptr;
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

/// `size()` elements of type T in one device's memory, freed on destruction. Move-only. Allocation
/// leaves the contents uninitialised (call `zero()` or `copy_from()`).
template <class T>
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "a device_buffer holds mutable, trivially copyable elements");

public:
  using element_type = T;
  using value_type = T;
  using snapshot_type = device_buffer<T>;

  device_buffer() = default;
  /// Allocates `size` elements on `d`.
  device_buffer(const device& d, std::size_t size) : device_buffer(driver().context(d.ordinal), size) {}
  /// Allocates room for `host` on `d` and copies it there.
  device_buffer(const device& d, std::span<const T> host) : device_buffer(d, host.size()) { span().copy_from(host); }
  device_buffer(const device& d, const std::vector<T>& host) : device_buffer(d, std::span<const T>(host)) {}
  /// Allocates `size` elements in `ctx`'s device.
  device_buffer(const device_context& ctx, std::size_t size) : context_(&ctx), size_(size) {
    if (size == 0) return;
    ctx.make_current();
    CUresult r = ctx.api().mem_alloc(&ptr_, size * sizeof(T));
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw error(fmt::format("device_buffer: cannot allocate {} bytes ({} x {}) on CUDA device {}: out of memory",
                              size * sizeof(T), size, cotune::element_type_name<T>(), ctx.ordinal()));
    ctx.check(r, fmt::format("cuMemAlloc of {} bytes", size * sizeof(T)));
  }

  device_buffer(device_buffer&& o) noexcept
      : context_(std::exchange(o.context_, nullptr)), ptr_(std::exchange(o.ptr_, 0)), size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      context_ = std::exchange(o.context_, nullptr);
      ptr_ = std::exchange(o.ptr_, 0);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { release(); }

  [[nodiscard]] device_span<T> span() const noexcept {
    return context_ ? device_span<T>(*context_, ptr_, size_) : device_span<T>();
  }
  operator device_span<T>() const noexcept { return span(); }             // NOLINT(google-explicit-constructor)
  operator device_span<const T>() const noexcept { return span(); }       // NOLINT(google-explicit-constructor)

  [[nodiscard]] CUdeviceptr data() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return cotune::element_type_name<T>(); }
  [[nodiscard]] const device_context* context() const noexcept { return context_; }
  [[nodiscard]] int ordinal() const noexcept { return context_ ? context_->ordinal() : -1; }
  [[nodiscard]] CUdeviceptr kernel_arg() const noexcept { return ptr_; }

  void zero() { span().zero(); }
  [[nodiscard]] snapshot_type snapshot() const { return span().snapshot(); }
  void restore(const snapshot_type& s) { span().restore(s); }
  void copy_from(std::span<const T> host) { span().copy_from(host); }
  void copy_to(std::span<T> host) const { span().copy_to(host); }
  [[nodiscard]] std::vector<T> to_vector() const { return span().to_vector(); }

private:
  void release() noexcept {
    if (!ptr_) return;
    // Errors are ignored: after a sticky error the context is lost and the memory goes with it.
    CUcontext current = nullptr;
    const auto& api = context_->api();
    if (api.ctx_get_current(&current) != CUDA_SUCCESS || current != context_->context())
      (void)api.ctx_set_current(context_->context());
    (void)api.mem_free(ptr_);
    ptr_ = 0;
  }

  const device_context* context_ = nullptr;
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

template <class T>
typename device_span<T>::snapshot_type device_span<T>::snapshot() const {
  if (!context_) return {};
  snapshot_type copy(*context_, size_);
  detail::copy_device(*context_, copy.data(), ptr_, size_bytes());
  return copy;
}

template <class T>
void device_span<T>::restore(const snapshot_type& s) const
  requires(!std::is_const_v<T>)
{
  if (s.size() != size_)
    throw error(fmt::format("device_span::restore: the snapshot holds {} elements, the span {}", s.size(), size_));
  if (context_) detail::copy_device(*context_, ptr_, s.data(), size_bytes());
}

/// Views `count` elements of device memory the caller already has (from cuMemAlloc, cudaMalloc, a
/// framework's tensor) on device `d`, so that a tuned kernel can take it and reset_to_zero and
/// restore_value work on it. The memory must be in `d`'s primary context (the runtime API's
/// allocations are) and outlive the span; cotune never frees it.
///
///     float* y = nullptr;  cudaMalloc(&y, n * sizeof(float));
///     tuner(cuda::device_view(y, n, d), n);
template <class T>
[[nodiscard]] device_span<T> device_view(T* ptr, std::size_t count, const device& d) {
  return device_span<T>(driver().context(d.ordinal), reinterpret_cast<CUdeviceptr>(ptr), count);
}
/// The same for a CUdeviceptr: the element type is named (`device_view<float>(ptr, n, d)`).
template <class T>
[[nodiscard]] device_span<T> device_view(CUdeviceptr ptr, std::size_t count, const device& d) {
  return device_span<T>(driver().context(d.ordinal), ptr, count);
}

static_assert(WritableBuffer<device_span<float>>);
static_assert(Buffer<device_span<const float>> && !WritableBuffer<device_span<const float>>);
static_assert(WritableBuffer<device_buffer<float>>);

} // namespace cotune::cuda
