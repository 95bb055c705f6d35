#pragma once
/// \file The bodies of hip/availability.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/availability.hpp>

namespace cotune::hip {

COTUNE_DECL availability_report availability() {
  availability_report r;
  std::string why;
  if (const runtime_library* lib = try_runtime()) {
    r.runtime_loaded = true;
    r.runtime_path = lib->path();
    r.runtime_version = lib->version_text();
    r.device_count = lib->device_count();
    if (r.device_count == 0)
      why = lib->init_error().empty() ? "the HIP runtime reports no devices"
                                      : "the HIP runtime reports no devices: " + lib->init_error();
  } else {
    why = runtime_error();
  }
  if (const hiprtc_library* rtc = try_hiprtc()) {
    r.hiprtc_loaded = true;
    r.hiprtc_path = rtc->path();
    r.hiprtc_version = rtc->version_text();
  } else {
    why += (why.empty() ? "" : "\n") + hiprtc_error();
  }
  r.message = why;
  return r;
}


COTUNE_DECL std::string availability_report::text() const {
  std::string out = runtime_loaded ? fmt::format(COTUNE_FMT("HIP runtime {} from '{}': {} device(s)"), runtime_version,
                                                 runtime_path, device_count)
                                   : std::string("HIP runtime: not loaded");
  out += hiprtc_loaded ? fmt::format(COTUNE_FMT("\nhiprtc {} from '{}'"), hiprtc_version, hiprtc_path)
                       : "\nhiprtc: not loaded";
  if (!message.empty()) out += "\n" + message;
  return out;
}

} // namespace cotune::hip
