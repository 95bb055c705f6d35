#pragma once
/// \file GPU isolation (COTUNE_ISOLATE), the parent's side, for CUDA and HIP alike: candidates are
/// benchmarked in a worker process per device, with its own context, so that an illegal address, a
/// trap, an abort, a segfault or a kernel that never ends costs that candidate alone. The parent's
/// context never runs the candidate: after a fault it still runs its own kernels and the winner.
/// The parts, by concern: gpu/isolation_protocol.hpp (what parent and worker say), gpu/isolation_pool.hpp
/// (the parent's worker processes), gpu/isolation_worker.hpp (the worker's side), and this file, the
/// parent's side of one measurement. cuda/isolation.hpp and hip/isolation.hpp name the runtime's worker
/// (`worker_kind`) and how its memory is shared (`Shares`).
///
/// How a worker starts: a spawn of /proc/self/exe (detail/process.hpp's `child_process`) with the
/// runtime's worker variable set (COTUNE_CUDA_ISOLATION_WORKER, COTUNE_HIP_ISOLATION_WORKER), which a
/// constructor in the runtime's benchmarker header recognises before main() and turns into the worker
/// loop (the gtest death-test trick). Chosen over a server forked before the runtime is
/// initialised (detail/fork_server.hpp, as the compile servers are) because that works only if the
/// server is forked before the program's first GPU call, which a library cannot promise: a program
/// that made a device buffer before its first tuning has an initialised driver, and a forked copy of
/// it cannot use the GPU. An exec'd worker is a fresh process at any time. What it costs: the
/// program's own static initialisers of higher priority run in the worker too (cotune's runs at
/// priority 101, before the default ones), and a program that is not the executable (a plugin loaded
/// by Python) has no worker: then, and whenever a worker cannot start, one warning says so and
/// candidates are measured in-process.
///
/// Arguments reach the worker as IPC memory handles of the parent's allocations (cuMemAlloc,
/// cudaMalloc, hipMalloc memory; CUDA pool and cuMemCreate memory are not IPC-capable, and such a
/// tuning is measured in-process with a warning naming the argument), scalars by value, the kernel as
/// its image bytes. reset_to_zero and restore_value run in the worker on the shared memory, as
/// in-process; the parent verifies (tune_options::verify) the worker's output in its own memory. User
/// hooks (pre_hook, post_hook, a config's pre-hook, on_load) are host code that only the parent can
/// run: a tuning with any is measured in-process (tune/isolated_measure.hpp says so once).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/gpu/device_memory.hpp>
#include <cotune/gpu/event_timing.hpp>
#include <cotune/gpu/isolation_pool.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::gpu::detail {

/// How a runtime shares its device memory with a worker: its device address type and `shareable`,
/// which describes an address of a context as an IPC-mapped parameter, or says why it cannot be one.
template <class S, class Context>
concept Shares = requires(const Context& ctx, typename S::pointer p, std::uint64_t extent, std::string& why) {
  { S::shareable(ctx, p, extent, why) } -> std::same_as<std::optional<worker_param>>;
};

/// `Shares` over a runtime's IPC calls `I` (cuda/isolation.hpp, hip/isolation.hpp):
///
///     using context = ...; using pointer = ...; using result = ...;
///     static constexpr std::string_view runtime, range_call, handle_call, advice;  // for messages
///     static bool ok(result);
///     static result address_range(const context&, pointer* base, std::size_t* size, pointer);
///     static result get_handle(const context&, std::array<char, 64>* handle, pointer base);
///     static pointer open(const context&, const std::array<char, 64>& handle);  // in the worker; throws
///     static void close(const context&, pointer) noexcept;
template <class I>
struct ipc_sharing {
  using pointer = typename I::pointer;

  /// Describes device address `ptr` of `ctx` as an IPC-mapped parameter (the allocation's handle and
  /// the offset in it); nothing, with `why` set, when its memory cannot be shared with another process.
  [[nodiscard]] static std::optional<worker_param> shareable(const typename I::context& ctx, pointer ptr,
                                                             std::uint64_t extent, std::string& why) {
    ctx.make_current();
    pointer base{};
    std::size_t size = 0;
    if (const auto r = I::address_range(ctx, &base, &size, ptr); !I::ok(r)) {
      why = fmt::format("its address {:#x} is not device memory of {} device {} ({}: {})", address_value(ptr),
                        I::runtime, ctx.ordinal(), I::range_call, ctx.library().error_text(r));
      return std::nullopt;
    }
    worker_param p;
    p.device = true;
    if (const auto r = I::get_handle(ctx, &p.handle, base); !I::ok(r)) {
      why = fmt::format("its memory cannot be shared with the isolation worker through {} IPC ({}: {}); {}", I::runtime,
                        I::handle_call, ctx.library().error_text(r), I::advice);
      return std::nullopt;
    }
    p.offset = address_value(ptr) - address_value(base);
    p.extent = std::min<std::uint64_t>(extent, size - p.offset);
    return p;
  }
  [[nodiscard]] static pointer open(const typename I::context& ctx, const std::array<char, 64>& handle) {
    return I::open(ctx, handle);
  }
  static void close(const typename I::context& ctx, pointer p) noexcept { I::close(ctx, p); }
};

/// The kernel arguments as a worker job's parameters (`params`): device memory (buffers, raw device
/// pointers) as IPC handles (`S`), the rest by value, reset_to_zero and restore_value flagged from
/// `task`. Returns why they cannot go to a worker (empty when they can).
template <class S, class Context, class... Args>
  requires Shares<S, Context>
[[nodiscard]] std::string describe_arguments(const Context& ctx, const cotune::detail::worker_task& task,
                                             std::vector<worker_param>& params, Args&... args) {
  using pointer = typename S::pointer;
  std::string why;
  std::size_t i = 0;
  auto describe = [&](auto& a) {
    using A = std::remove_cvref_t<decltype(a)>;
    const bool zero = i < task.zero.size() && task.zero[i], restore = i < task.restore.size() && task.restore[i];
    const bool poison = i < task.poison.size() && task.poison[i];
    const std::size_t at = i++;
    if (!why.empty()) return;
    auto device_memory = [&](pointer p, std::uint64_t extent) {
      if ((zero || restore) && extent == 0 && p) {
        why = fmt::format("argument {} is zeroed or restored, but its byte size is unknown", at);
        return;
      }
      if (!p) { // a null pointer or an empty buffer: nothing to share
        params.push_back({.bytes = std::string(sizeof p, '\0')});
        return;
      }
      std::string reason;
      auto param = S::shareable(ctx, p, extent, reason);
      if (!param) {
        why = fmt::format("argument {}: {}", at, reason);
        return;
      }
      param->zero = zero;
      param->restore = restore;
      param->poison = poison;
      params.push_back(*std::move(param));
    };
    if constexpr (AnyBuffer<A>) {
      const auto v = cotune::kernel_arg(a);
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, pointer>) {
        const auto& buf = as_buffer(a);
        std::uint64_t extent = 0;
        if constexpr (requires { buf.size_bytes(); }) extent = buf.size_bytes();
        device_memory(v, extent);
      } else {
        why = fmt::format("argument {} is a buffer whose kernel argument is not a device address", at);
      }
    } else if constexpr (std::is_pointer_v<A>) {
      device_memory(address_from<pointer>(a), 0); // a raw device pointer: mapped, never zeroed
    } else {
      const auto v = cotune::kernel_arg(a);
      static_assert(std::is_trivially_copyable_v<std::remove_cvref_t<decltype(v)>>,
                    "a GPU kernel argument is passed by value: it must be trivially copyable");
      params.push_back({.bytes = std::string(reinterpret_cast<const char*>(&v), sizeof v)});
    }
  };
  (describe(args), ...);
  return why;
}

/// Runs `f` (its module's `image`, entry `symbol`) in its device's worker of `Kind`, once or measured
/// with `o` (`task.timed`) under the parent's timing knobs `flush_factor` and `graph`, zeroing and
/// restoring the flagged arguments there: device memory goes as `S` shares it, the rest by value,
/// after the device's cotune stream has finished (so that the worker sees the arguments as the caller
/// left them). `refused`, and a warning once, when an argument cannot be shared or no worker can
/// start: the caller measures in-process then. Throws out_of_resources for more dynamic shared memory
/// than the kernel can have.
template <const worker_kind& Kind, class S, class K, class... Args>
[[nodiscard]] cotune::detail::isolated_result run_in_worker(const loaded_kernel<K>& f, std::string image,
                                                            std::string symbol, const launch_grid& grid,
                                                            const cotune::detail::worker_task& task,
                                                            const bench_options& o, double flush_factor, bool graph,
                                                            Args&... args) {
  check_dynamic_shared(f, grid.shared_bytes);
  const block_dims& block = grid.block ? *grid.block : f.block;
  worker_job job;
  job.timed = task.timed;
  job.image = std::move(image);
  job.symbol = std::move(symbol);
  job.grid = {grid.x, grid.y, grid.z};
  job.block = {static_cast<std::uint32_t>(block.x), static_cast<std::uint32_t>(block.y),
               static_cast<std::uint32_t>(block.z)};
  job.shared_bytes = grid.shared_bytes;
  job.timeout_ms = task.timeout_ms;
  job.bench = o;
  job.flush_factor = flush_factor;
  job.graph = graph;
  job.batch_below_us = knobs().bench.batch_below_us.get();
  auto& pool = isolation_pool::of<Kind>();
  const auto& ctx = *f.context;
  if (std::string why = describe_arguments<S>(ctx, task, job.params, args...); !why.empty()) {
    cotune::detail::isolated_result out;
    out.end = cotune::detail::isolated_result::ending::refused;
    out.detail = fmt::format("COTUNE_ISOLATE: kernel '{}' is measured in-process, not in an isolation worker: {}",
                             f.module->kernel_name, why);
    pool.warn_once(out.detail);
    return out;
  }
  ctx.make_current();
  ctx.synchronize("waiting for the device before measuring in the isolation worker");
  auto out = pool.run(ctx.ordinal(), job);
  // The device is as warm as after a measurement here: this process's next one (the finals) need
  // not warm it up again.
  if (job.timed && out.end == cotune::detail::isolated_result::ending::returned)
    device_warmth::of(K::memory::name, ctx.ordinal()).touch();
  return out;
}

} // namespace cotune::gpu::detail
