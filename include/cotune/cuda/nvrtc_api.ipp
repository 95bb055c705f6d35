#pragma once
/// \file The bodies of cuda/nvrtc_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/nvrtc_api.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::vector<std::string> nvrtc_search_paths() {
  if (auto chosen = cuda_knobs().libnvrtc_path.get()) return {*chosen};
  const std::string soname = fmt::format("libnvrtc.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> paths{soname, "libnvrtc.so"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) paths.push_back(fmt::format("{}/lib64/{}", v, soname));
  paths.push_back("/usr/local/cuda/lib64/" + soname);
  return paths;
}

COTUNE_DECL const nvrtc_entry& current_nvrtc_entry() {
  const auto key = nvrtc_search_paths();
  return gpu::library_for<nvrtc_library>(key);
}

} // namespace cotune::cuda::detail

namespace cotune::cuda {

COTUNE_DECL void preload_nvrtc() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct joiner {
      std::thread thread;
      ~joiner() {
        if (thread.joinable()) thread.join();
      }
    };
    static joiner background; // joined at exit, before the process tears down
    background.thread = std::thread([paths = detail::nvrtc_search_paths()] { (void)gpu::library_for<nvrtc_library>(paths); });
  });
}

COTUNE_DECL const nvrtc_library* try_nvrtc() {
  return detail::current_nvrtc_entry().library.get();
}

COTUNE_DECL std::string nvrtc_error() {
  return detail::current_nvrtc_entry().message;
}

COTUNE_DECL const nvrtc_library& nvrtc() {
  const auto& entry = detail::current_nvrtc_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::cuda
