#pragma once
/// \file The bodies of cuda/isolation.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/isolation.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL CUresult ipc_calls::get_handle(const device_context& ctx, std::array<char, 64>* handle, CUdeviceptr base) {
  CUipcMemHandle h{};
  static_assert(sizeof h == sizeof *handle);
  const CUresult r = ctx.api().ipc_get_mem_handle(&h, base);
  std::memcpy(handle->data(), &h, sizeof h);
  return r;
}

COTUNE_DECL CUdeviceptr ipc_calls::open(const device_context& ctx, const std::array<char, 64>& handle) {
  CUipcMemHandle h{};
  std::memcpy(&h, handle.data(), sizeof h);
  CUdeviceptr base = 0;
  ctx.check(ctx.api().ipc_open_mem_handle(&base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            "mapping an argument's memory (cuIpcOpenMemHandle)");
  return base;
}

} // namespace cotune::cuda::detail
