#pragma once
/// \file `cotune::hip::device_buffer<T>` (owning) and `device_span<T>` (non-owning): the GPU layer's
/// device memory (gpu/device_memory.hpp) over the HIP runtime, and `device_view` for memory the caller
/// already has (from hipMalloc, a framework's tensor). Both satisfy `cotune::Buffer`, so reset_to_zero
/// and restore_value work on them, and pass their device address (a `void*`) to kernels.
///
///     cotune::hip::device_buffer<float> y(dev, n);   // on the device's cotune stream
///     y.zero();
///     tuner(x.span(), y, n);
///     std::vector<float> out = y.to_vector();        // waits for the stream

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/gpu/device_memory.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip {

/// The HIP runtime's device-memory calls, for the GPU layer's buffers.
struct memory_runtime {
  using context = device_context;
  using device = hip::device;
  using pointer = device_ptr;
  static constexpr std::string_view name = "HIP";

  [[nodiscard]] static const context& context_of(int ordinal) { return runtime().context(ordinal); }
  [[nodiscard]] static bool allocate(const context& ctx, pointer* out, std::size_t bytes);
  static void release(const context& ctx, pointer p) noexcept {
    (void)ctx.try_make_current(); // hipFree needs no current device, but frees on the right one
    (void)ctx.api().free(p);
  }
  static void zero(const context& ctx, pointer p, std::size_t bytes);
  static void fill32(const context& ctx, pointer p, std::uint32_t value, std::size_t words) {
    ctx.make_current();
    ctx.check(ctx.api().memset_d32_async(p, static_cast<int>(value), words, ctx.stream()), "hipMemsetD32Async");
  }
  static void copy(const context& ctx, pointer to, pointer from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_dtod_async(to, from, bytes, ctx.stream()), "hipMemcpyDtoDAsync");
  }
  static void upload(const context& ctx, pointer to, const void* from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_htod_async(to, const_cast<void*>(from), bytes, ctx.stream()), "hipMemcpyHtoDAsync");
    ctx.synchronize("copying to the device"); // the host memory may go away once we return
  }
  static void download(const context& ctx, void* to, pointer from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_dtoh_async(to, from, bytes, ctx.stream()), "hipMemcpyDtoHAsync");
    ctx.synchronize("copying to the host");
  }
};
static_assert(gpu::DeviceMemoryRuntime<memory_runtime>);

/// A non-owning view of `size()` elements of type T in one HIP device's memory.
template <class T>
using device_span = gpu::device_span<memory_runtime, T>;
/// `size()` elements of type T in one HIP device's memory, freed on destruction. Move-only.
template <class T>
using device_buffer = gpu::device_buffer<memory_runtime, T>;

/// Views `count` elements of device memory the caller already has (hipMalloc, a framework's tensor)
/// on device `d`, so that a tuned kernel can take it and reset_to_zero and restore_value work on it.
/// The memory must outlive the span; cotune never frees it.
///
///     float* y = nullptr;  hipMalloc(&y, n * sizeof(float));
///     tuner(hip::device_view(y, n, d), n);
template <class T>
[[nodiscard]] device_span<T> device_view(T* ptr, std::size_t count, const device& d) {
  return gpu::device_view<memory_runtime>(ptr, count, d.ordinal);
}

static_assert(WritableBuffer<device_span<float>>);
static_assert(Buffer<device_span<const float>> && !WritableBuffer<device_span<const float>>);
static_assert(WritableBuffer<device_buffer<float>>);

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/device_buffer.ipp>
#endif
