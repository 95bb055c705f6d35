#pragma once
/// \file The bodies of cuda/device.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/device.hpp>

namespace cotune::cuda {

COTUNE_DECL bool interchangeable(const device& a, const device& b) {
  return a.cc == b.cc && a.name == b.name && a.sm_count == b.sm_count && a.l2_bytes == b.l2_bytes &&
         a.memory_bytes == b.memory_bytes && a.warp_size == b.warp_size &&
         a.max_threads_per_block == b.max_threads_per_block && a.max_registers_per_block == b.max_registers_per_block &&
         a.max_shared_per_block == b.max_shared_per_block && a.max_shared_per_block_optin == b.max_shared_per_block_optin;
}

COTUNE_DECL device describe_device(const driver_library& lib, int ordinal) {
  const auto& api = lib.api();
  CUdevice handle = 0;
  auto check = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS)
      throw error(fmt::format(COTUNE_FMT("CUDA device {}: {} failed: {}"), ordinal, what, lib.error_text(r)));
  };
  check(api.device_get(&handle, ordinal), "cuDeviceGet");
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    check(api.device_get_attribute(&v, a, handle), "cuDeviceGetAttribute");
    return v;
  };
  device d;
  d.ordinal = ordinal;
  char name[256] = {};
  check(api.device_get_name(name, sizeof name - 1, handle), "cuDeviceGetName");
  d.name = name;
  d.cc = {attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)};
  d.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  std::size_t total = 0;
  check(api.device_total_mem(&total, handle), "cuDeviceTotalMem");
  d.memory_bytes = static_cast<std::int64_t>(total);
  d.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.max_registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.max_block_dims = {attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                      attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  d.max_grid_dims = {attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                     attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  d.max_shared_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d.max_shared_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (d.max_shared_per_block_optin < d.max_shared_per_block) d.max_shared_per_block_optin = d.max_shared_per_block;
  d.pci_bus_id = fmt::format(COTUNE_FMT("{:04x}:{:02x}:{:02x}.0"), attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                             attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID), attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
  return d;
}

COTUNE_DECL std::vector<device> devices() {
  return gpu::list_devices(try_driver(), [](const driver_library& lib, int i) { return describe_device(lib, i); });
}

} // namespace cotune::cuda
