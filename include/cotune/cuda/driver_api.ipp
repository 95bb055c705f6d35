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
