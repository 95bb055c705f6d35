#pragma once
/// \file The bodies of hip/compiled_backend.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/compiled_backend.hpp>

#include <atomic>
#include <map>
#include <utility>
#include <mutex>

#include <dlfcn.h>

namespace cotune::hip::detail {

COTUNE_DECL const address_calls& address_calls_of(const runtime_library& lib) {
  // The last library asked about, without a lock: every launch asks (there is one HIP runtime in practice).
  static std::atomic<const std::pair<const runtime_library* const, address_calls>*> last{nullptr};
  if (const auto* hit = last.load(std::memory_order_acquire); hit && hit->first == &lib) return hit->second;
  static std::mutex mutex;
  static std::map<const runtime_library*, address_calls> resolved; // libraries are never closed
  std::lock_guard lock(mutex);
  auto [it, fresh] = resolved.try_emplace(&lib);
  if (fresh) {
    it->second.launch = reinterpret_cast<decltype(address_calls::launch)>(::dlsym(lib.handle(), "hipLaunchKernel"));
    it->second.get_attributes =
        reinterpret_cast<decltype(address_calls::get_attributes)>(::dlsym(lib.handle(), "hipFuncGetAttributes"));
  }
  last.store(&*it, std::memory_order_release);
  return it->second;
}


COTUNE_DECL hip_error compiled_kernel_calls::attribute(const device_context& ctx, int* v, gpu::kernel_attribute a,
                                                       hip_function f) {
  const auto& calls = address_calls_of(ctx.library());
  if (!calls.get_attributes) return hip_error_not_found;
  address_calls::attributes attrs{};
  const hip_error r = calls.get_attributes(&attrs, f);
  using gpu::kernel_attribute;
  *v = a == kernel_attribute::registers             ? attrs.num_regs
       : a == kernel_attribute::static_shared_bytes ? static_cast<int>(attrs.shared_size_bytes)
       : a == kernel_attribute::local_bytes         ? static_cast<int>(attrs.local_size_bytes)
                                                    : attrs.max_threads_per_block;
  return r;
}

COTUNE_DECL hip_error compiled_kernel_calls::launch(const device_context& ctx, hip_function f, const launch_grid& g,
                                                    const block_dims& b,
                                                    hip_stream stream, void** params) {
  const auto& calls = address_calls_of(ctx.library());
  if (!calls.launch) return hip_error_not_found;
  return calls.launch(f, {g.x, g.y, g.z},
                      {static_cast<unsigned>(b.x), static_cast<unsigned>(b.y), static_cast<unsigned>(b.z)}, params,
                      g.shared_bytes, stream);
}

} // namespace cotune::hip::detail
