#pragma once
/// \file The bodies of hip/device.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/device.hpp>

namespace cotune::hip {

COTUNE_DECL bool interchangeable(const device& a, const device& b) {
  return a.arch_name == b.arch_name && a.name == b.name && a.cu_count == b.cu_count && a.l2_bytes == b.l2_bytes &&
         a.memory_bytes == b.memory_bytes && a.warp_size == b.warp_size &&
         a.max_threads_per_block == b.max_threads_per_block && a.max_registers_per_block == b.max_registers_per_block &&
         a.max_shared_per_block == b.max_shared_per_block;
}

COTUNE_DECL device describe_device(const runtime_library& lib, int ordinal) {
  device_properties p{};
  if (hip_error r = lib.api().get_device_properties(&p, ordinal); r != hip_success)
    throw error(
        fmt::format(COTUNE_FMT("HIP device {}: hipGetDeviceProperties failed: {}"), ordinal, lib.error_text(r)));
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
  d.pci_bus_id = fmt::format(COTUNE_FMT("{:04x}:{:02x}:{:02x}.0"), p.pci_domain_id, p.pci_bus_id, p.pci_device_id);
  return d;
}

COTUNE_DECL std::vector<device> devices() {
  return gpu::list_devices(try_runtime(), [](const runtime_library& lib, int i) { return describe_device(lib, i); });
}

} // namespace cotune::hip
