#pragma once
/// \file The bodies of hip/device_buffer.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/device_buffer.hpp>

namespace cotune::hip {

COTUNE_DECL bool memory_runtime::allocate(const context& ctx, pointer* out, std::size_t bytes) {
  ctx.make_current();
  const hip_error r = ctx.api().malloc(out, bytes);
  if (r == hip_error_out_of_memory) return false;
  ctx.check(r, fmt::format(COTUNE_FMT("hipMalloc of {} bytes"), bytes));
  return true;
}

COTUNE_DECL void memory_runtime::zero(const context& ctx, pointer p, std::size_t bytes) {
  ctx.make_current();
  // 32-bit stores fill memory faster than byte stores; use them whenever the range allows.
  if (reinterpret_cast<std::uintptr_t>(p) % 4 == 0 && bytes % 4 == 0)
    ctx.check(ctx.api().memset_d32_async(p, 0, bytes / 4, ctx.stream()), "hipMemsetD32Async");
  else ctx.check(ctx.api().memset_async(p, 0, bytes, ctx.stream()), "hipMemsetAsync");
}

} // namespace cotune::hip
