#pragma once
/// \file `cotune::cuda::availability()`: whether CUDA can be used here, and if not, why.

#include <cotune/detail/config.hpp>
#include <string>

#include <fmt/core.h>

#include <cotune/cuda/device.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/nvrtc_api.hpp>

namespace cotune::cuda {

/// What this process can do with CUDA. Nothing here throws: a missing library is a message.
struct availability_report {
  bool driver_loaded = false; ///< libcuda opened and every function resolved
  std::string driver_path;    ///< where it was looked for
  std::string driver_version; ///< "13.0", empty when not loaded
  int device_count = 0;
  bool nvrtc_loaded = false;
  std::string nvrtc_path;     ///< the library that loaded, empty when none did
  std::string nvrtc_version;  ///< "13.0"
  /// Why there are no devices or no compiler (empty when both are there).
  std::string message;

  /// Devices are present to run on.
  [[nodiscard]] bool can_run() const noexcept { return driver_loaded && device_count > 0; }
  /// Kernels can be compiled (no GPU needed).
  [[nodiscard]] bool can_compile() const noexcept { return nvrtc_loaded; }

  /// One line per library, for logs and `cotune` tool output.
  [[nodiscard]] std::string text() const;
};

/// Loads (once per library path) the driver and NVRTC as the knobs say, and reports.
[[nodiscard]] COTUNE_DECL availability_report availability();

} // namespace cotune::cuda

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/availability.ipp>
#endif
