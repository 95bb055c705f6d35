#pragma once
/// \file The bodies of hip/hip_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip {

COTUNE_DECL std::vector<const char*> runtime_symbols(std::string_view hip_name) {
  if (hip_name == "hipGetDeviceProperties") return {"hipGetDevicePropertiesR0000", "hipGetDeviceProperties"};
  return {hip_name.data()};
}

COTUNE_DECL void device_context::check(hip_error r, std::string_view what) const {
  // Not called sticky here: on an AMD GPU a memory fault usually ends the process inside the runtime.
  if (r != hip_success) gpu::throw_call_failed("HIP", ordinal_, what, library_->error_text(r), /*sticky=*/false);
}

COTUNE_DECL void device_context::synchronize(std::string_view what,
                                        std::optional<std::chrono::steady_clock::time_point> deadline) const {
  if (!deadline) return check(api_->stream_synchronize(stream_), what);
  gpu::poll_until_done(
      [&] {
        const hip_error r = api_->stream_query(stream_);
        if (r != hip_error_not_ready) check(r, what);
        return r != hip_error_not_ready;
      },
      *deadline, "HIP", ordinal_, what);
}

} // namespace cotune::hip

namespace cotune::hip::detail {

COTUNE_DECL std::vector<std::string> runtime_search_paths() {
  if (auto chosen = hip_knobs().libamdhip64_path.get()) return {*chosen};
  return {"libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so.5"};
}

COTUNE_DECL const runtime_entry& current_runtime_entry() {
  const auto key = runtime_search_paths();
  return gpu::library_for<runtime_library>(key);
}

} // namespace cotune::hip::detail

namespace cotune::hip {

COTUNE_DECL const runtime_library* try_runtime() {
  return detail::current_runtime_entry().library.get();
}

COTUNE_DECL std::string runtime_error() {
  return detail::current_runtime_entry().message;
}

COTUNE_DECL const runtime_library& runtime() {
  const auto& entry = detail::current_runtime_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::hip
