#pragma once
/// \file The bodies of hip/hiprtc_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hiprtc_api.hpp>

namespace cotune::hip::detail {

COTUNE_DECL std::vector<std::string> hiprtc_search_paths() {
  if (auto chosen = hip_knobs().libhiprtc_path.get()) return {*chosen};
  return {"libhiprtc.so.6", "libhiprtc.so.5", "libamdhip64.so.5", "/opt/rocm/lib/libhiprtc.so.6",
          "/opt/rocm/lib/libhiprtc.so.5"};
}

COTUNE_DECL const hiprtc_entry& current_hiprtc_entry() {
  const auto key = hiprtc_search_paths();
  return gpu::library_for<hiprtc_library>(key);
}

} // namespace cotune::hip::detail

namespace cotune::hip {

COTUNE_DECL const hiprtc_library* try_hiprtc() {
  return detail::current_hiprtc_entry().library.get();
}

COTUNE_DECL std::string hiprtc_error() {
  return detail::current_hiprtc_entry().message;
}

COTUNE_DECL const hiprtc_library& hiprtc() {
  const auto& entry = detail::current_hiprtc_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::hip
