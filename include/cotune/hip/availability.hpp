#pragma once
/// \file `cotune::hip::availability()`: whether HIP can be used here, and if not, exactly why.

#include <cotune/detail/config.hpp>
#include <string>

#include <fmt/core.h>

#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hiprtc_api.hpp>

namespace cotune::hip {

/// What this process can do with HIP. Nothing here throws: a missing library is a message.
struct availability_report {
  bool runtime_loaded = false; ///< libamdhip64 opened and every function resolved
  std::string runtime_path;    ///< the library that loaded
  std::string runtime_version; ///< "5.2"
  int device_count = 0;
  bool hiprtc_loaded = false;
  std::string hiprtc_path;
  std::string hiprtc_version;
  /// Why there are no devices or no compiler: the library missing (every path tried), or the
  /// runtime's own answer ("hipGetDeviceCount failed: hipErrorNoDevice ..."). Empty when both are there.
  std::string message;

  [[nodiscard]] bool can_run() const noexcept { return runtime_loaded && device_count > 0; }
  /// Kernels can be compiled (no GPU needed).
  [[nodiscard]] bool can_compile() const noexcept { return hiprtc_loaded; }

  [[nodiscard]] std::string text() const;
};

/// Loads (once per library path) the runtime and hiprtc as the knobs say, and reports.
[[nodiscard]] COTUNE_DECL availability_report availability();

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/availability.ipp>
#endif
