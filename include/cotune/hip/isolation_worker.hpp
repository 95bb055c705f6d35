#pragma once
/// \file The HIP isolation worker (gpu/isolation_worker.hpp is the worker's side for both runtimes):
/// how it opens its device, loads a code object, maps IPC handles, launches and tells a lost device.
/// Its entry is a constructor of priority 101 that runs before main() in every program that includes
/// hip/hip_benchmarker.hpp; it returns at once unless COTUNE_HIP_ISOLATION_WORKER is set.
///
/// On an AMD GPU a memory fault usually ends the process from inside the runtime (ROCm reports it and
/// aborts): in a worker that is a crash the parent records, as for a segfault.

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <cotune/core/errors.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/gpu/isolation_worker.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_benchmarker.hpp>
#include <cotune/hip/isolation.hpp>

namespace cotune::hip::detail {

/// What gpu::detail::isolation_server needs of HIP.
struct worker_runtime {
  using memory = memory_runtime;
  using benchmarker = hip_benchmarker;
  using module = hip_module;
  using function = hip_function;
  static constexpr const gpu::detail::worker_kind& kind = isolation_worker_kind;

  [[nodiscard]] static device open(int ordinal) {
    const runtime_library* lib = try_runtime();
    if (!lib) throw error(hip::runtime_error());
    (void)lib->context(ordinal);
    return describe_device(*lib, ordinal);
  }
  [[nodiscard]] static module load(const device_context& ctx, const std::string& image) {
    hip_module m = nullptr;
    ctx.check(ctx.api().module_load_data(&m, image.data()), "loading the candidate in its isolation worker");
    return m;
  }
  static void unload(const device_context& ctx, module m) noexcept { (void)ctx.api().module_unload(m); }
  [[nodiscard]] static function entry(const device_context& ctx, module m, const std::string& symbol) {
    hip_function f = nullptr;
    ctx.check(ctx.api().module_get_function(&f, m, symbol.c_str()), "hipModuleGetFunction");
    return f;
  }
  /// Nothing to opt into: a kernel may use the device's whole LDS (hip_backend::load checked the size).
  static void allow_shared(const device_context&, function, std::uint32_t) noexcept {}
  [[nodiscard]] static device_ptr open_ipc(const device_context& ctx, const std::array<char, 64>& handle) {
    ipc_mem_handle h{};
    static_assert(sizeof h == sizeof handle);
    std::memcpy(&h, handle.data(), sizeof h);
    // hipIpcMemLazyEnablePeerAccess is 0 in HIP 5.2's headers and 1 in later ones, and the runtime
    // refuses any other value: the one that worked is kept, the other tried on hipErrorInvalidValue.
    static std::atomic<unsigned> lazy_peer_access{ctx.library().version() >= 60000000 ? 1u : 0u};
    void* base = nullptr;
    unsigned flags = lazy_peer_access.load(std::memory_order_relaxed);
    hip_error r = ctx.api().ipc_open_mem_handle(&base, h, flags);
    if (r == hip_error_invalid_value) {
      flags ^= 1u;
      if ((r = ctx.api().ipc_open_mem_handle(&base, h, flags)) == hip_success)
        lazy_peer_access.store(flags, std::memory_order_relaxed);
    }
    ctx.check(r, "mapping an argument's memory (hipIpcOpenMemHandle)");
    return base;
  }
  static void close_ipc(const device_context& ctx, device_ptr p) noexcept { (void)ctx.api().ipc_close_mem_handle(p); }
  static void launch(const device_context& ctx, function f, const gpu::detail::worker_job& job, void** params) {
    ctx.check(ctx.api().module_launch_kernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                             job.block[2], job.shared_bytes, ctx.stream(), params, nullptr),
              "launching the candidate in its isolation worker");
  }
  /// After a failure: the sticky error that lost the device's work, if that is what happened.
  [[nodiscard]] static std::optional<std::string> lost(const device_context& ctx) {
    const hip_error r = ctx.api().device_synchronize();
    if (!is_sticky_error(r)) return std::nullopt;
    return ctx.library().error_text(r);
  }
};

/// Before main(): becomes the HIP isolation worker when the parent asked for one; else nothing.
[[gnu::constructor(101), gnu::used]] static void become_hip_isolation_worker_if_asked() {
  gpu::detail::become_worker_if_asked<worker_runtime>();
}

} // namespace cotune::hip::detail
