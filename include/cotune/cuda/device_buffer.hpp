#pragma once
/// \file `cotune::cuda::device_buffer<T>` (owning) and `device_span<T>` (non-owning): the GPU layer's
/// device memory (gpu/device_memory.hpp) over the CUDA driver, and `device_view` for memory the caller
/// already has. Both satisfy `cotune::Buffer` and pass their CUdeviceptr to kernels.
///
/// Every operation goes to the device's cotune stream, in order with cotune's launches on it: a
/// `zero()` before a launch happens before the kernel runs. Copies to and from the host wait for
/// the stream.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/device_memory.hpp>

namespace cotune::cuda {

/// The CUDA driver's device-memory calls, for the GPU layer's buffers.
struct memory_runtime {
  using context = device_context;
  using device = cuda::device;
  using pointer = CUdeviceptr;
  static constexpr std::string_view name = "CUDA";

  [[nodiscard]] static const context& context_of(int ordinal) { return driver().context(ordinal); }
  [[nodiscard]] static bool allocate(const context& ctx, pointer* out, std::size_t bytes);
  static void release(const context& ctx, pointer p) noexcept {
    (void)ctx.try_make_current();
    (void)ctx.api().mem_free(p);
  }
  static void zero(const context& ctx, pointer p, std::size_t bytes) {
    ctx.make_current();
    // 32-bit stores fill memory faster than byte stores; use them whenever the range allows.
    if (p % 4 == 0 && bytes % 4 == 0) ctx.check(ctx.api().memset_d32_async(p, 0, bytes / 4, ctx.stream()), "cuMemsetD32Async");
    else ctx.check(ctx.api().memset_d8_async(p, 0, bytes, ctx.stream()), "cuMemsetD8Async");
  }
  static void fill32(const context& ctx, pointer p, std::uint32_t value, std::size_t words) {
    ctx.make_current();
    ctx.check(ctx.api().memset_d32_async(p, value, words, ctx.stream()), "cuMemsetD32Async");
  }
  static void copy(const context& ctx, pointer to, pointer from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_dtod_async(to, from, bytes, ctx.stream()), "cuMemcpyDtoDAsync");
  }
  static void upload(const context& ctx, pointer to, const void* from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_htod_async(to, from, bytes, ctx.stream()), "cuMemcpyHtoDAsync");
    ctx.synchronize("copying to the device"); // the host memory may go away once we return
  }
  static void download(const context& ctx, void* to, pointer from, std::size_t bytes) {
    ctx.make_current();
    ctx.check(ctx.api().memcpy_dtoh_async(to, from, bytes, ctx.stream()), "cuMemcpyDtoHAsync");
    ctx.synchronize("copying to the host");
  }
};
static_assert(gpu::DeviceMemoryRuntime<memory_runtime>);

/// A non-owning view of `size()` elements of type T in one CUDA device's memory.
template <class T>
using device_span = gpu::device_span<memory_runtime, T>;
/// `size()` elements of type T in one CUDA device's memory, freed on destruction. Move-only.
template <class T>
using device_buffer = gpu::device_buffer<memory_runtime, T>;

/// Views `count` elements of device memory the caller already has (from cuMemAlloc, cudaMalloc, a
/// framework's tensor) on device `d`, so that a tuned kernel can take it and reset_to_zero and
/// restore_value work on it. The memory must be in `d`'s primary context (the runtime API's
/// allocations are) and outlive the span; cotune never frees it.
///
///     float* y = nullptr;  cudaMalloc(&y, n * sizeof(float));
///     tuner(cuda::device_view(y, n, d), n);
template <class T>
[[nodiscard]] device_span<T> device_view(T* ptr, std::size_t count, const device& d) {
  return gpu::device_view<memory_runtime>(ptr, count, d.ordinal);
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

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/device_buffer.ipp>
#endif
