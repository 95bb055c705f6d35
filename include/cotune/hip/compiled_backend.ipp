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

} // namespace cotune::hip::detail
