#pragma once
/// \file The bodies of cuda/driver_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/driver_api.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::atomic<void (*)()>& driver_opened_hook() noexcept {
  static std::atomic<void (*)()> hook{nullptr};
  return hook;
}

COTUNE_DECL std::atomic<bool>& driver_opened() noexcept {
  static std::atomic<bool> opened{false};
  return opened;
}

} // namespace cotune::cuda::detail

namespace cotune::cuda {

COTUNE_DECL std::unique_ptr<driver_library> driver_library::open(const std::string& path, std::string& why) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    why =
        fmt::format(COTUNE_FMT("cannot load the CUDA driver library '{}': {}; install the NVIDIA driver, or set "
                               "COTUNE_LIBCUDA_PATH (cotune::cuda::cuda_knobs().libcuda_path) to libcuda.so.1's path"),
                    path, e ? e : "unknown error");
    return nullptr;
  }
  std::unique_ptr<driver_library> lib(new driver_library(handle, path));
  std::string missing;
  lib->resolve(missing);
  if (!missing.empty()) {
    int version = 0;
    if (lib->api_.driver_get_version) lib->api_.driver_get_version(&version);
    why =
        fmt::format(COTUNE_FMT("the CUDA driver library '{}' (CUDA {}.{}) lacks {}; cotune was built against the CUDA "
                               "{}.{} headers: update the NVIDIA driver to one that supports CUDA {}.{} or newer"),
                    path, version / 1000, version % 1000 / 10, missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
                    CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return nullptr;
  }
  lib->api_.driver_get_version(&lib->version_);
  detail::driver_opened().store(true);
  if (auto hook = detail::driver_opened_hook().load()) hook();
  if (CUresult r = lib->api_.init(0); r != CUDA_SUCCESS) {
    lib->init_error_ = fmt::format(COTUNE_FMT("cuInit failed: {}"), lib->error_text(r));
  } else if (CUresult c = lib->api_.device_get_count(&lib->device_count_); c != CUDA_SUCCESS) {
    lib->init_error_ = fmt::format(COTUNE_FMT("cuDeviceGetCount failed: {}"), lib->error_text(c));
    lib->device_count_ = 0;
  }
  lib->contexts_.reserve(static_cast<std::size_t>(lib->device_count_));
  for (int i = 0; i < lib->device_count_; ++i)
    lib->contexts_.emplace_back(new device_context(*lib, lib->api_, i));
  return lib;
}

COTUNE_DECL std::string driver_library::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.get_error_name) api_.get_error_name(r, &name);
  if (api_.get_error_string) api_.get_error_string(r, &text);
  return fmt::format(COTUNE_FMT("{} ({})"), name ? name : fmt::format(COTUNE_FMT("CUresult {}"), static_cast<int>(r)),
                     text ? text : "no description");
}

COTUNE_DECL const device_context& driver_library::context(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count_)
    throw error(fmt::format(COTUNE_FMT("CUDA device {} does not exist: the driver reports {} device(s)"), ordinal,
                            device_count_));
  device_context& ctx = *contexts_[static_cast<std::size_t>(ordinal)];
  std::call_once(ctx.once_, [&] {
    auto fail = [&](CUresult r, const char* what) {
      throw error(fmt::format(COTUNE_FMT("CUDA device {}: {} failed: {}"), ordinal, what, error_text(r)));
    };
    if (CUresult r = api_.device_get(&ctx.device_, ordinal); r != CUDA_SUCCESS) fail(r, "cuDeviceGet");
    if (CUresult r = api_.device_primary_ctx_retain(&ctx.context_, ctx.device_); r != CUDA_SUCCESS)
      fail(r, "cuDevicePrimaryCtxRetain");
    if (CUresult r = api_.ctx_set_current(ctx.context_); r != CUDA_SUCCESS) fail(r, "cuCtxSetCurrent");
    if (CUresult r = api_.stream_create(&ctx.stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      fail(r, "cuStreamCreate");
  });
  return ctx;
}

COTUNE_DECL void device_context::check(CUresult r, std::string_view what) const {
  if (r != CUDA_SUCCESS) gpu::throw_call_failed("CUDA", ordinal_, what, library_->error_text(r), is_sticky_error(r));
}

COTUNE_DECL void device_context::synchronize(std::string_view what,
                                        std::optional<std::chrono::steady_clock::time_point> deadline) const {
  if (!deadline) return check(api_->stream_synchronize(stream_), what);
  gpu::poll_until_done(
      [&] {
        const CUresult r = api_->stream_query(stream_);
        if (r != CUDA_ERROR_NOT_READY) check(r, what);
        return r != CUDA_ERROR_NOT_READY;
      },
      *deadline, "CUDA", ordinal_, what);
}

} // namespace cotune::cuda

namespace cotune::cuda::detail {

COTUNE_DECL std::string driver_path() {
  return cuda_knobs().libcuda_path.get().value_or("libcuda.so.1");
}

COTUNE_DECL const driver_entry& current_driver_entry() {
  const auto key = driver_path();
  return gpu::library_for<driver_library>(key);
}

} // namespace cotune::cuda::detail

namespace cotune::cuda {

COTUNE_DECL const driver_library* try_driver() {
  return detail::current_driver_entry().library.get();
}

COTUNE_DECL std::string driver_error() {
  return detail::current_driver_entry().message;
}

COTUNE_DECL const driver_library& driver() {
  const auto& entry = detail::current_driver_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::cuda
