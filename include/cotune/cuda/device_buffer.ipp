#pragma once
/// \file The bodies of cuda/device_buffer.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/device_buffer.hpp>

namespace cotune::cuda {

COTUNE_DECL bool memory_runtime::allocate(const context& ctx, pointer* out, std::size_t bytes) {
  ctx.make_current();
  const CUresult r = ctx.api().mem_alloc(out, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
  ctx.check(r, fmt::format(COTUNE_FMT("cuMemAlloc of {} bytes"), bytes));
  return true;
}

} // namespace cotune::cuda
