#pragma once
/// \file The bodies of cuda/cuda_backend.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/cuda_backend.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    for (std::string_view flag : {"-arch", "--gpu-architecture"}) {
      std::string_view o = options[i];
      if (!o.starts_with(flag)) continue;
      o.remove_prefix(flag.size());
      if (o.starts_with("=")) return std::string(o.substr(1));
      if (o.empty() && i + 1 < options.size()) return options[i + 1];
    }
  }
  return std::nullopt;
}

COTUNE_DECL std::optional<std::pair<std::int64_t, std::int64_t>> shared_overflow(const std::string& log) {
  constexpr std::string_view marker = "uses too much shared data (";
  auto at = log.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const char* p = log.c_str() + at + marker.size();
  char* end = nullptr;
  const long long required = std::strtoll(p, &end, 0);
  if (end == p) return std::nullopt;
  const char* limit_at = std::strstr(end, ", ");
  if (!limit_at) return std::nullopt;
  const long long limit = std::strtoll(limit_at + 2, &end, 0);
  if (end == limit_at + 2) return std::nullopt;
  return std::pair<std::int64_t, std::int64_t>{required, limit};
}


COTUNE_DECL CUresult kernel_calls::attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, CUfunction f) {
  using gpu::kernel_attribute;
  const CUfunction_attribute which = a == kernel_attribute::registers             ? CU_FUNC_ATTRIBUTE_NUM_REGS
                                     : a == kernel_attribute::static_shared_bytes ? CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
                                     : a == kernel_attribute::local_bytes         ? CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
                                                                                  : CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
  return ctx.api().func_get_attribute(v, which, f);
}

COTUNE_DECL void backend_api::check_target(const nvrtc_library& nv, const device& d, const std::string& arch,
                                           std::string_view name) {
  if (arch == d.arch() && !nv.supports(d.cc.major * 10 + d.cc.minor))
    throw compile_error(
        fmt::format(COTUNE_FMT("cuda backend: NVRTC {} cannot compile for {} (device {}); it supports {}; use "
                               "a CUDA toolkit that supports this GPU (COTUNE_LIBNVRTC_PATH)"),
                    nv.version_text(), arch, name, supported_text(nv)),
        "");
}

COTUNE_DECL CUresult backend_api::is_capturing(const driver_library& lib, CUstream stream, bool* capturing) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = lib.api().stream_is_capturing(stream, &status);
  *capturing = r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT || (r == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE);
  return r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ? CUDA_SUCCESS : r;
}

} // namespace cotune::cuda::detail

namespace cotune::cuda {

COTUNE_DECL cuda_backend::cuda_backend(options o) {
  // COTUNE_PRECOMPILED=only: every binary comes from the precompiled file, and NVRTC is never loaded.
  if (o.preload_nvrtc && gpu::current_precompiled_mode() != gpu::precompiled_mode::only) {
    // Started once the driver is open (now, or when it opens): dlopen holds the loader's lock, so
    // opening NVRTC while libcuda is being opened would delay the driver instead of overlapping
    // with cuInit and context creation.
    cuda::detail::driver_opened_hook().store(&cuda::preload_nvrtc);
    if (cuda::detail::driver_opened().load()) cuda::preload_nvrtc();
  }
}

} // namespace cotune::cuda
