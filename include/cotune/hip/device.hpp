#pragma once
/// \file `cotune::hip::device`: what cotune knows about one HIP device, and the list of devices.

#include <cotune/detail/config.hpp>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/gpu/runtime_library.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip {

/// One HIP device: its ordinal, architecture and limits. `devices()` fills every field from the
/// runtime; a hand-made description (`device{.arch_name = "gfx90a"}`) is enough to compile for an
/// architecture on a machine without an AMD GPU.
struct device {
  int ordinal = 0;                    ///< the runtime's device index
  std::string arch_name{"gfx90a"};    ///< gcnArchName, the target hiprtc compiles for: "gfx90a:sramecc+:xnack-"
  std::string name{};                 ///< "AMD Instinct MI250X"
  int cu_count = 0;                   ///< compute units
  std::int64_t l2_bytes = 0;          ///< L2 cache size (sizes the benchmark's flush)
  std::int64_t memory_bytes = 0;
  /// The wavefront: 64 on CDNA (gfx9), 32 on RDNA. A config's num_warps counts wavefronts here, as in
  /// Triton's AMD backend, so a block runs num_warps x warp_size threads.
  int warp_size = 64;
  int max_threads_per_block = 1024;
  int max_registers_per_block = 65536;
  std::int64_t max_shared_per_block = 64 * 1024; ///< LDS per workgroup
  std::string pci_bus_id{};           ///< "0000:c1:00.0"
  std::array<int, 3> max_block_dims{1024, 1024, 1024};          ///< threads per block along x, y, z
  /// Blocks per grid along x, y, z; `devices()` reads them from hipGetDeviceProperties (maxGridSize).
  std::array<int, 3> max_grid_dims{2147483647, 2147483647, 2147483647};

  /// The target hiprtc compiles for (`--offload-arch=`): the full gcnArchName with its features.
  [[nodiscard]] const std::string& arch() const noexcept { return arch_name; }
  /// The processor alone: "gfx90a" for "gfx90a:sramecc+:xnack-".
  [[nodiscard]] std::string processor() const { return arch_name.substr(0, arch_name.find(':')); }

  /// The limits a launch on this device must respect (checked per dimension by check_block/check_grid).
  [[nodiscard]] launch_limits limits() const noexcept { return gpu::limits_of(*this); }

  friend bool operator==(const device&, const device&) = default;
};

/// Same model with the same limits: a candidate timed on one stands for the other.
[[nodiscard]] COTUNE_DECL bool interchangeable(const device& a, const device& b);

/// Describes device `ordinal` of `lib` (hipGetDeviceProperties, in HIP 5's layout).
[[nodiscard]] COTUNE_DECL device describe_device(const runtime_library& lib, int ordinal);

/// Every HIP device, in the runtime's order. Empty, never an error, without a runtime or a device
/// (`availability()` says why).
[[nodiscard]] COTUNE_DECL std::vector<device> devices();

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/device.ipp>
#endif
