#pragma once
/// \file The bodies of hip/hip_backend.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hip_backend.hpp>

namespace cotune::hip::detail {

COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  constexpr std::string_view flag = "--offload-arch=";
  for (const auto& o : options)
    if (std::string_view(o).starts_with(flag)) return o.substr(flag.size());
  return std::nullopt;
}


COTUNE_DECL hip_error kernel_calls::attribute(const device_context& ctx, int* v, gpu::kernel_attribute a,
                                              hip_function f) {
  using gpu::kernel_attribute;
  const int which = a == kernel_attribute::registers             ? hip_func_attribute_num_regs
                    : a == kernel_attribute::static_shared_bytes ? hip_func_attribute_shared_size_bytes
                    : a == kernel_attribute::local_bytes         ? hip_func_attribute_local_size_bytes
                                                                 : hip_func_attribute_max_threads_per_block;
  return ctx.api().func_get_attribute(v, which, f);
}

COTUNE_DECL hip_error backend_api::is_capturing(const runtime_library& lib, hip_stream stream, bool* capturing) {
  int status = hip_stream_capture_status_none;
  const hip_error r = lib.api().stream_is_capturing(stream, &status);
  *capturing = r == hip_error_stream_capture_implicit || (r == hip_success && status != hip_stream_capture_status_none);
  return r == hip_error_stream_capture_implicit ? hip_success : r;
}

} // namespace cotune::hip::detail
