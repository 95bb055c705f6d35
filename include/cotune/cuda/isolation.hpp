#pragma once
/// \file CUDA's isolation worker (COTUNE_ISOLATE; gpu/isolation.hpp is how isolation works): its name
/// and variable, and CUDA's IPC calls, through which the parent's device memory reaches it: CUDA IPC
/// memory handles of cuMemAlloc and cudaMalloc allocations. Pool memory (cudaMallocAsync,
/// cuMemAllocFromPoolAsync) and cuMemCreate memory are not IPC-capable: a tuning with such an argument
/// is measured in-process, with a warning naming the argument.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

#include <cuda.h>

#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/isolation_pool.hpp>
#include <cotune/gpu/isolation_protocol.hpp>

namespace cotune::cuda::detail {

inline constexpr gpu::detail::worker_kind isolation_worker_kind{
    "CUDA", "COTUNE_CUDA_ISOLATION_WORKER", "cotune-cuda-isolation-worker", "cotune/cuda/cuda_benchmarker.hpp"};

/// The process's CUDA isolation workers, one per device.
[[nodiscard]] inline gpu::detail::isolation_pool& isolation_workers() {
  return gpu::detail::isolation_pool::of<isolation_worker_kind>();
}

/// The driver's IPC calls (gpu::detail::ipc_sharing).
struct ipc_calls {
  using context = device_context;
  using pointer = CUdeviceptr;
  using result = CUresult;
  static constexpr std::string_view runtime = "CUDA", range_call = "cuMemGetAddressRange",
                                    handle_call = "cuIpcGetMemHandle",
                                    advice = "memory from a pool (cudaMallocAsync, cuMemAllocFromPoolAsync) or from "
                                             "cuMemCreate is not IPC-capable: allocate it with cuMemAlloc or "
                                             "cudaMalloc (cuda::device_buffer does)";

  [[nodiscard]] static bool ok(CUresult r) noexcept { return r == CUDA_SUCCESS; }
  static CUresult address_range(const device_context& ctx, CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
    return ctx.api().mem_get_address_range(base, size, p);
  }
  static CUresult get_handle(const device_context& ctx, std::array<char, 64>* handle, CUdeviceptr base);
  [[nodiscard]] static CUdeviceptr open(const device_context& ctx, const std::array<char, 64>& handle);
  static void close(const device_context& ctx, CUdeviceptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
};

/// How CUDA device memory goes to a worker.
using ipc_sharing = gpu::detail::ipc_sharing<ipc_calls>;
static_assert(gpu::detail::Shares<ipc_sharing, device_context>);

} // namespace cotune::cuda::detail

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/isolation.ipp>
#endif
