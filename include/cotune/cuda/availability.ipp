#pragma once
/// \file The bodies of cuda/availability.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/availability.hpp>

namespace cotune::cuda {

COTUNE_DECL availability_report availability() {
  availability_report r;
  r.driver_path = detail::driver_path();
  std::string why;
  if (const driver_library* lib = try_driver()) {
    r.driver_loaded = true;
    r.driver_version = lib->version_text();
    r.device_count = lib->device_count();
    if (r.device_count == 0)
      why = lib->init_error().empty() ? "the CUDA driver reports no devices"
                                      : "the CUDA driver reports no devices: " + lib->init_error();
  } else {
    why = driver_error();
  }
  if (const nvrtc_library* nv = try_nvrtc()) {
    r.nvrtc_loaded = true;
    r.nvrtc_path = nv->path();
    r.nvrtc_version = nv->version_text();
  } else {
    why += (why.empty() ? "" : "\n") + nvrtc_error();
  }
  r.message = why;
  return r;
}


COTUNE_DECL std::string availability_report::text() const {
  std::string out = driver_loaded ? fmt::format(COTUNE_FMT("CUDA driver {} from '{}': {} device(s)"), driver_version,
                                                driver_path, device_count)
                                  : fmt::format(COTUNE_FMT("CUDA driver: not loaded ('{}')"), driver_path);
  out +=
      nvrtc_loaded ? fmt::format(COTUNE_FMT("\nNVRTC {} from '{}'"), nvrtc_version, nvrtc_path) : "\nNVRTC: not loaded";
  if (!message.empty()) out += "\n" + message;
  return out;
}

} // namespace cotune::cuda
