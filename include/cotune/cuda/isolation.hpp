#pragma once
/// \file CUDA's isolation worker (COTUNE_ISOLATE; gpu/isolation.hpp is how isolation works): its name
/// and variable, and how the parent's device memory reaches it (and is mapped there), as CUDA IPC memory handles of
/// cuMemAlloc and cudaMalloc allocations. Pool memory (cudaMallocAsync, cuMemAllocFromPoolAsync) and
/// cuMemCreate memory are not IPC-capable: a tuning with such an argument is measured in-process,
/// with a warning naming the argument.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/isolation_protocol.hpp>

namespace cotune::cuda::detail {

inline constexpr gpu::detail::worker_kind isolation_worker_kind{
    "CUDA", "COTUNE_CUDA_ISOLATION_WORKER", "cotune-cuda-isolation-worker", "cotune/cuda/cuda_benchmarker.hpp"};

/// The process's CUDA isolation workers, one per device.
[[nodiscard]] inline gpu::detail::isolation_pool& isolation_workers() {
  return gpu::detail::isolation_pool::of<isolation_worker_kind>();
}

/// How CUDA device memory goes to a worker (gpu::detail::Shares).
struct ipc_sharing {
  using pointer = CUdeviceptr;

  [[nodiscard]] static pointer from_raw(const volatile void* p) noexcept { return reinterpret_cast<CUdeviceptr>(p); }

  /// Describes device address `ptr` of `ctx` as an IPC-mapped parameter; nothing, with `why` set, when
  /// its memory cannot be shared with another process.
  [[nodiscard]] static std::optional<gpu::detail::worker_param> shareable(const device_context& ctx, CUdeviceptr ptr,
                                                                          std::uint64_t extent, std::string& why) {
    ctx.make_current();
    const auto& api = ctx.api();
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (CUresult r = api.mem_get_address_range(&base, &size, ptr); r != CUDA_SUCCESS) {
      why = fmt::format("its address {:#x} is not device memory of CUDA device {} (cuMemGetAddressRange: {})", ptr,
                        ctx.ordinal(), ctx.library().error_text(r));
      return std::nullopt;
    }
    CUipcMemHandle h{};
    if (CUresult r = api.ipc_get_mem_handle(&h, base); r != CUDA_SUCCESS) {
      why = fmt::format("its memory cannot be shared with the isolation worker through CUDA IPC (cuIpcGetMemHandle: "
                        "{}); memory from a pool (cudaMallocAsync, cuMemAllocFromPoolAsync) or from cuMemCreate is "
                        "not IPC-capable: allocate it with cuMemAlloc or cudaMalloc (cuda::device_buffer does)",
                        ctx.library().error_text(r));
      return std::nullopt;
    }
    gpu::detail::worker_param p;
    p.device = true;
    static_assert(sizeof h == sizeof p.handle);
    std::memcpy(p.handle.data(), &h, sizeof h);
    p.offset = ptr - base;
    p.extent = std::min<std::uint64_t>(extent, size - p.offset);
    return p;
  }

  /// In the worker: maps the parent's allocation that `handle` names.
  [[nodiscard]] static CUdeviceptr open(const device_context& ctx, const std::array<char, 64>& handle) {
    CUipcMemHandle h{};
    static_assert(sizeof h == sizeof handle);
    std::memcpy(&h, handle.data(), sizeof h);
    CUdeviceptr base = 0;
    ctx.check(ctx.api().ipc_open_mem_handle(&base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              "mapping an argument's memory (cuIpcOpenMemHandle)");
    return base;
  }
  static void close(const device_context& ctx, CUdeviceptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
};

static_assert(gpu::detail::Shares<ipc_sharing, device_context>);

} // namespace cotune::cuda::detail
