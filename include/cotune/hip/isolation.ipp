#pragma once
/// \file The bodies of hip/isolation.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/isolation.hpp>

namespace cotune::hip::detail {

COTUNE_DECL hip_error ipc_calls::get_handle(const device_context& ctx, std::array<char, 64>* handle, device_ptr base) {
  ipc_mem_handle h{};
  static_assert(sizeof h == sizeof *handle);
  const hip_error r = ctx.api().ipc_get_mem_handle(&h, base);
  std::memcpy(handle->data(), &h, sizeof h);
  return r;
}

COTUNE_DECL device_ptr ipc_calls::open(const device_context& ctx, const std::array<char, 64>& handle) {
  ipc_mem_handle h{};
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

} // namespace cotune::hip::detail
