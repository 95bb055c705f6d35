#pragma once
/// \file The CUDA isolation worker (gpu/isolation_worker.hpp is the worker's side for both runtimes):
/// how it opens its device, loads a cubin, maps IPC handles, launches and tells a lost context. Its
/// entry is a constructor of priority 101 that runs before main() in every program that includes
/// cuda/cuda_benchmarker.hpp; it returns at once unless COTUNE_CUDA_ISOLATION_WORKER is set.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/isolation.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/gpu/isolation_worker.hpp>

namespace cotune::cuda::detail {

/// What gpu::detail::isolation_server needs of CUDA.
struct worker_runtime {
  using memory = memory_runtime;
  using benchmarker = cuda_benchmarker;
  using module = CUmodule;
  using function = CUfunction;
  static constexpr const gpu::detail::worker_kind& kind = isolation_worker_kind;

  [[nodiscard]] static device open(int ordinal) {
    const driver_library* lib = try_driver();
    if (!lib) throw error(driver_error());
    (void)lib->context(ordinal);
    return describe_device(*lib, ordinal);
  }
  [[nodiscard]] static module load(const device_context& ctx, const std::string& image) {
    CUmodule m = nullptr;
    ctx.check(ctx.api().module_load_data(&m, image.c_str()), "loading the candidate in its isolation worker");
    return m;
  }
  static void unload(const device_context& ctx, module m) noexcept { (void)ctx.api().module_unload(m); }
  [[nodiscard]] static function entry(const device_context& ctx, module m, const std::string& symbol) {
    CUfunction f = nullptr;
    ctx.check(ctx.api().module_get_function(&f, m, symbol.c_str()), "cuModuleGetFunction");
    return f;
  }
  /// Opts into `bytes` of dynamic shared memory (needed past 48 KiB less the kernel's static shared
  /// memory; harmless below).
  static void allow_shared(const device_context& ctx, function f, std::uint32_t bytes) {
    if (bytes == 0) return;
    ctx.check(ctx.api().func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
              "opting into dynamic shared memory");
  }
  [[nodiscard]] static CUdeviceptr open_ipc(const device_context& ctx, const std::array<char, 64>& handle) {
    CUipcMemHandle h{};
    static_assert(sizeof h == sizeof handle);
    std::memcpy(&h, handle.data(), sizeof h);
    CUdeviceptr base = 0;
    ctx.check(ctx.api().ipc_open_mem_handle(&base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              "mapping an argument's memory (cuIpcOpenMemHandle)");
    return base;
  }
  static void close_ipc(const device_context& ctx, CUdeviceptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
  static void launch(const device_context& ctx, function f, const gpu::detail::worker_job& job, void** params) {
    ctx.check(ctx.api().launch_kernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                      job.block[2], job.shared_bytes, ctx.stream(), params, nullptr),
              "launching the candidate in its isolation worker");
  }
  /// After a failure: the sticky error that lost the context, if that is what happened.
  [[nodiscard]] static std::optional<std::string> lost(const device_context& ctx) {
    const CUresult r = ctx.api().ctx_synchronize();
    if (!is_sticky_error(r)) return std::nullopt;
    return ctx.library().error_text(r);
  }
};

/// Before main(): becomes the CUDA isolation worker when the parent asked for one; else nothing.
[[gnu::constructor(101), gnu::used]] static void become_cuda_isolation_worker_if_asked() {
  gpu::detail::become_worker_if_asked<worker_runtime>();
}

} // namespace cotune::cuda::detail
