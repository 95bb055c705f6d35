#pragma once
/// \file HIP's isolation worker (COTUNE_ISOLATE; gpu/isolation.hpp is how isolation works, the same
/// as CUDA's): its name and variable, and how the parent's device memory reaches it, as HIP IPC memory
/// handles of hipMalloc allocations (hip::device_buffer's). Memory that is not IPC-capable makes the
/// tuning measured in-process, with a warning naming the argument.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/core.h>

#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip::detail {

inline constexpr gpu::detail::worker_kind isolation_worker_kind{
    "HIP", "COTUNE_HIP_ISOLATION_WORKER", "cotune-hip-isolation-worker", "cotune/hip/hip_benchmarker.hpp"};

/// The process's HIP isolation workers, one per device.
[[nodiscard]] inline gpu::detail::isolation_pool& isolation_workers() {
  return gpu::detail::isolation_pool::of<isolation_worker_kind>();
}

/// How HIP device memory goes to a worker (gpu::detail::Shares).
struct ipc_sharing {
  using pointer = device_ptr;

  [[nodiscard]] static pointer from_raw(const volatile void* p) noexcept { return const_cast<void*>(p); }

  /// Describes device address `ptr` of `ctx` as an IPC-mapped parameter; nothing, with `why` set, when
  /// its memory cannot be shared with another process.
  [[nodiscard]] static std::optional<gpu::detail::worker_param> shareable(const device_context& ctx, device_ptr ptr,
                                                                          std::uint64_t extent, std::string& why) {
    ctx.make_current();
    const auto& api = ctx.api();
    device_ptr base = nullptr;
    std::size_t size = 0;
    if (hip_error r = api.mem_get_address_range(&base, &size, ptr); r != hip_success) {
      why = fmt::format("its address {} is not device memory of HIP device {} (hipMemGetAddressRange: {})", ptr,
                        ctx.ordinal(), ctx.library().error_text(r));
      return std::nullopt;
    }
    ipc_mem_handle h{};
    if (hip_error r = api.ipc_get_mem_handle(&h, base); r != hip_success) {
      why = fmt::format("its memory cannot be shared with the isolation worker through HIP IPC (hipIpcGetMemHandle: "
                        "{}); allocate it with hipMalloc (hip::device_buffer does)",
                        ctx.library().error_text(r));
      return std::nullopt;
    }
    gpu::detail::worker_param p;
    p.device = true;
    static_assert(sizeof h == sizeof p.handle);
    std::memcpy(p.handle.data(), &h, sizeof h);
    p.offset = static_cast<std::uint64_t>(static_cast<const char*>(ptr) - static_cast<const char*>(base));
    p.extent = std::min<std::uint64_t>(extent, size - p.offset);
    return p;
  }

  /// In the worker: maps the parent's allocation that `handle` names.
  [[nodiscard]] static device_ptr open(const device_context& ctx, const std::array<char, 64>& handle) {
    ipc_mem_handle h{};
    static_assert(sizeof h == sizeof handle);
    std::memcpy(&h, handle.data(), sizeof h);
    // hipIpcMemLazyEnablePeerAccess is 0 in HIP 5.2's headers and 1 in later ones, and the runtime
    // refuses any other value: the one that worked is kept, the other tried on hipErrorInvalidValue.
    static std::atomic<unsigned> lazy_peer_access{ctx.library().version() >= 60000000 ? 1u : 0u};
    void* base = nullptr;
    unsigned flags = lazy_peer_access.load(std::memory_order_relaxed);
    hip_error r = ctx.api().ipc_open_mem_handle(&base, h, flags);
    if (r == hip_error_invalid_value) {
      flags ^= 1u;
      if ((r = ctx.api().ipc_open_mem_handle(&base, h, flags)) == hip_success)
        lazy_peer_access.store(flags, std::memory_order_relaxed);
    }
    ctx.check(r, "mapping an argument's memory (hipIpcOpenMemHandle)");
    return base;
  }
  static void close(const device_context& ctx, device_ptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
};

static_assert(gpu::detail::Shares<ipc_sharing, device_context>);

} // namespace cotune::hip::detail
