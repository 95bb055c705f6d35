#pragma once
/// \file The bodies of cuda/compiled_backend.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/compiled_backend.hpp>

#include <dlfcn.h>

#include <fmt/core.h>

#include <cotune/gpu/program_module.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::optional<gpu::worker_image> compiled_image(const device_context& ctx, CUfunction f,
                                                           const void* host_address, std::string& why) {
  using get_name_fn = CUresult (*)(const char**, CUfunction);
  const auto get_name = reinterpret_cast<get_name_fn>(::dlsym(ctx.library().handle(), "cuFuncGetName"));
  if (!get_name) {
    why = "the CUDA driver cannot name a compiled kernel (cuFuncGetName needs CUDA 12.3 or newer)";
    return std::nullopt;
  }
  ctx.make_current();
  const char* name = nullptr;
  if (const CUresult r = get_name(&name, f); r != CUDA_SUCCESS || !name) {
    why = fmt::format(COTUNE_FMT("cuFuncGetName failed: {}"), ctx.library().error_text(r));
    return std::nullopt;
  }
  const gpu::program_module* module = nullptr;
  try {
    module = &gpu::program_module_of(host_address);
  } catch (const error& e) {
    why = e.what();
    return std::nullopt;
  }
  for (std::string_view fat : module->fat_binaries) {
    CUmodule m{};
    if (ctx.api().module_load_data(&m, fat.data()) != CUDA_SUCCESS) continue;
    CUfunction g{};
    const bool holds = ctx.api().module_get_function(&g, m, name) == CUDA_SUCCESS;
    (void)ctx.api().module_unload(m);
    if (holds) return gpu::worker_image{std::string(fat), name};
  }
  why = fmt::format(COTUNE_FMT("none of the {} device images nvcc embedded in '{}' holds kernel '{}'"),
                    module->fat_binaries.size(), module->file.string(), name);
  return std::nullopt;
}

} // namespace cotune::cuda::detail
