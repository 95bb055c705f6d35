#pragma once
/// \file `cotune::hip::device`: what cotune knows about one HIP device, and the list of devices.

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
[[nodiscard]] inline bool interchangeable(const device& a, const device& b) {
  return a.arch_name == b.arch_name && a.name == b.name && a.cu_count == b.cu_count && a.l2_bytes == b.l2_bytes &&
         a.memory_bytes == b.memory_bytes && a.warp_size == b.warp_size &&
         a.max_threads_per_block == b.max_threads_per_block && a.max_registers_per_block == b.max_registers_per_block &&
         a.max_shared_per_block == b.max_shared_per_block;
}

/// Describes device `ordinal` of `lib` (hipGetDeviceProperties, in HIP 5's layout).
[[nodiscard]] inline device describe_device(const runtime_library& lib, int ordinal) {
  device_properties p{};
  if (hip_error r = lib.api().get_device_properties(&p, ordinal); r != hip_success)
    throw error(fmt::format("HIP device {}: hipGetDeviceProperties failed: {}", ordinal, lib.error_text(r)));
  device d;
  d.ordinal = ordinal;
  d.name.assign(p.name, ::strnlen(p.name, sizeof p.name));
  d.arch_name.assign(p.gcn_arch_name, ::strnlen(p.gcn_arch_name, sizeof p.gcn_arch_name));
  d.cu_count = p.multi_processor_count;
  d.l2_bytes = p.l2_cache_size;
  d.memory_bytes = static_cast<std::int64_t>(p.total_global_mem);
  d.warp_size = p.warp_size;
  d.max_threads_per_block = p.max_threads_per_block;
  d.max_registers_per_block = p.regs_per_block;
  d.max_block_dims = {p.max_threads_dim[0], p.max_threads_dim[1], p.max_threads_dim[2]};
  d.max_grid_dims = {p.max_grid_size[0], p.max_grid_size[1], p.max_grid_size[2]};
  d.max_shared_per_block = static_cast<std::int64_t>(p.shared_mem_per_block);
  d.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", p.pci_domain_id, p.pci_bus_id, p.pci_device_id);
  return d;
}

/// Every HIP device, in the runtime's order. Empty, never an error, without a runtime or a device
/// (`availability()` says why).
[[nodiscard]] inline std::vector<device> devices() {
  return gpu::list_devices(try_runtime(), [](const runtime_library& lib, int i) { return describe_device(lib, i); });
}

} // namespace cotune::hip
