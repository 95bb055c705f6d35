#pragma once
/// \file `cotune::cuda::device`: what cotune knows about one CUDA device, and the list of devices.

#include <cotune/detail/config.hpp>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/runtime_library.hpp>

namespace cotune::cuda {

/// A compute capability (9.0 for the H100 and H200).
struct compute_capability {
  int major = 0;
  int minor = 0;
  friend constexpr bool operator==(const compute_capability&, const compute_capability&) = default;
  friend constexpr auto operator<=>(const compute_capability&, const compute_capability&) = default;
};

/// One CUDA device: its ordinal, architecture and limits. `devices()` fills every field from the
/// driver; a hand-made description (`device{.cc = {9, 0}}`) is enough to compile for an
/// architecture on a machine without a GPU. Defaults are those of every GPU since Volta.
struct device {
  int ordinal = 0;                                  ///< the driver's device index
  compute_capability cc{};                          ///< e.g. {9, 0}
  std::string name{};                               ///< e.g. "NVIDIA H200"
  int sm_count = 0;                                 ///< multiprocessors
  std::int64_t l2_bytes = 0;                        ///< L2 cache size (sizes the benchmark's flush)
  std::int64_t memory_bytes = 0;                    ///< global memory
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_registers_per_block = 65536;
  std::int64_t max_shared_per_block = 48 * 1024;    ///< static + dynamic, without opting in
  std::int64_t max_shared_per_block_optin = 48 * 1024; ///< with cuFuncSetAttribute's opt-in (227 KB on sm_90)
  std::string pci_bus_id{};                         ///< "0000:3b:00.0"; tells physical devices apart
  std::array<int, 3> max_block_dims{1024, 1024, 64};             ///< threads per block along x, y, z
  std::array<int, 3> max_grid_dims{2147483647, 65535, 65535};    ///< blocks per grid along x, y, z

  /// The real architecture NVRTC targets: "sm_90".
  [[nodiscard]] std::string arch() const { return fmt::format("sm_{}{}", cc.major, cc.minor); }

  /// The limits a launch on this device must respect (checked per dimension by check_block/check_grid).
  [[nodiscard]] launch_limits limits() const noexcept { return gpu::limits_of(*this); }

  friend bool operator==(const device&, const device&) = default;
};

/// True when two devices are the same model with the same limits, so that a candidate timed on one
/// stands for the other (one candidate list can be split across them). Ordinals and PCI ids differ.
[[nodiscard]] COTUNE_DECL bool interchangeable(const device& a, const device& b);

/// Describes device `ordinal` of `lib` (attribute queries only: no context is created).
[[nodiscard]] COTUNE_DECL device describe_device(const driver_library& lib, int ordinal);

/// Every CUDA device, in the driver's order. Empty, never an error, when there is no driver or no
/// device (`availability()` says why).
[[nodiscard]] COTUNE_DECL std::vector<device> devices();

} // namespace cotune::cuda

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/device.ipp>
#endif
