#pragma once
/// \file HIP's isolation worker (COTUNE_ISOLATE; gpu/isolation.hpp is how isolation works, the same as
/// CUDA's): its name and variable, and HIP's IPC calls, through which the parent's device memory
/// reaches it: HIP IPC memory handles of hipMalloc allocations (hip::device_buffer's). Memory that is
/// not IPC-capable makes the tuning measured in-process, with a warning naming the argument.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <string_view>

#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/isolation_pool.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip::detail {

inline constexpr gpu::detail::worker_kind isolation_worker_kind{
    "HIP", "COTUNE_HIP_ISOLATION_WORKER", "cotune-hip-isolation-worker", "cotune/hip/hip_benchmarker.hpp"};

/// The process's HIP isolation workers, one per device.
[[nodiscard]] inline gpu::detail::isolation_pool& isolation_workers() {
  return gpu::detail::isolation_pool::of<isolation_worker_kind>();
}

/// The runtime's IPC calls (gpu::detail::ipc_sharing).
struct ipc_calls {
  using context = device_context;
  using pointer = device_ptr;
  using result = hip_error;
  static constexpr std::string_view runtime = "HIP", range_call = "hipMemGetAddressRange",
                                    handle_call = "hipIpcGetMemHandle",
                                    advice = "allocate it with hipMalloc (hip::device_buffer does)";

  [[nodiscard]] static bool ok(hip_error r) noexcept { return r == hip_success; }
  static hip_error address_range(const device_context& ctx, device_ptr* base, std::size_t* size, device_ptr p) {
    return ctx.api().mem_get_address_range(base, size, p);
  }
  static hip_error get_handle(const device_context& ctx, std::array<char, 64>* handle, device_ptr base);
  [[nodiscard]] static device_ptr open(const device_context& ctx, const std::array<char, 64>& handle);
  static void close(const device_context& ctx, device_ptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
};

/// How HIP device memory goes to a worker.
using ipc_sharing = gpu::detail::ipc_sharing<ipc_calls>;
static_assert(gpu::detail::Shares<ipc_sharing, device_context>);

} // namespace cotune::hip::detail

#if COTUNE_HEADER_ONLY
#include <cotune/hip/isolation.ipp>
#endif
