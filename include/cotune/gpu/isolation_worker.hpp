#pragma once
/// \file A GPU isolation worker's side (gpu/isolation.hpp says why workers exist and how they start),
/// for CUDA and HIP alike. Each runtime's benchmarker header (cuda/cuda_benchmarker.hpp,
/// hip/hip_benchmarker.hpp) has a constructor of priority 101, run before the program's ordinary static
/// initialisers and before main(), which calls `become_worker_if_asked<rtc_worker<Api, Benchmarker>>()`:
/// in a worker (the runtime's variable is set) it opens the runtime, makes a context on its device,
/// reports ready and serves jobs until the parent closes the socket, then leaves with _exit: the
/// program's main() never runs there. In every other process it returns at once.
///
/// A job: load the image (the last `kept_modules` images stay loaded: the finals interleave their
/// finalists round by round, and reloading a module at every switch cost S2 about 15 ms), map the arguments' IPC handles
/// (kept while the next job uses them), then run once and wait for it with the bench timeout as the
/// deadline (a verification job), or measure with the runtime's benchmarker exactly as in-process, its
/// first run (bounded by the same timeout) the candidate's first (a timed job). A sticky
/// error (illegal address, trap, assert) is reported and the worker exits: its context is lost.
///
/// What a runtime `W` provides (`rtc_worker` below makes one from a GPU backend's API table):
///
///     using memory = ...;        // its DeviceMemoryRuntime (context, device, pointer)
///     using benchmarker = ...;   // constructible from (const device&, gpu::event_bench_options)
///     using module = ...; using function = ...;
///     static constexpr const worker_kind& kind;
///     static device open(int ordinal);                                  // throws why it cannot
///     static module load(const context&, const std::string& image);     // throws launch_error
///     static void unload(const context&, module) noexcept;
///     static function entry(const context&, module, const std::string& symbol);
///     static void allow_shared(const context&, function, std::uint32_t bytes);  // dynamic shared memory
///     static pointer open_ipc(const context&, const std::array<char, 64>& handle);
///     static void close_ipc(const context&, pointer) noexcept;
///     static void launch(const context&, function, const worker_job&, void** params);
///     static std::optional<std::string> lost(const context&);  // after a failure: the sticky error, if any

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/fork_process.hpp>
#include <cotune/gpu/device_memory.hpp>
#include <cotune/gpu/event_timing.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::gpu::detail {

/// An argument's memory that this worker cannot map (its IPC handle does not open here).
struct unmappable : error {
  using error::error;
};

/// A worker's state between jobs.
template <class W>
class isolation_server {
public:
  using memory = typename W::memory;
  using context = typename memory::context;
  using device = typename memory::device;
  using pointer = typename memory::pointer;

  isolation_server(const context& ctx, device d) : ctx_(&ctx), device_(std::move(d)) {}
  isolation_server(const isolation_server&) = delete;
  isolation_server& operator=(const isolation_server&) = delete;
  ~isolation_server() {
    for (auto& m : modules_) W::unload(*ctx_, m.module);
  }

  /// How many loaded images a worker keeps: more than a tuning's finalists (at most 8 by default).
  static constexpr std::size_t kept_modules = 16;

  /// Runs one job and answers on `fd`; false when the worker must end (its context is lost or a
  /// kernel may still be running).
  bool serve(int fd, const worker_job& job) {
    try {
      ctx_->make_current();
      load(job);
      std::vector<std::string> values = map_params(job);
      std::vector<void*> params;
      for (auto& v : values) params.push_back(v.data());
      params.push_back(nullptr);
      std::vector<device_buffer<memory, std::uint8_t>> saved(job.params.size());
      for (std::size_t i = 0; i < job.params.size(); ++i)
        if (job.params[i].restore && job.params[i].extent)
          saved[i] = device_buffer<memory, std::uint8_t>(*ctx_, job.params[i].extent);
      auto address = [&](std::size_t i) {
        pointer p{};
        std::memcpy(&p, values[i].data(), sizeof p);
        return p;
      };
      // As kernel_arguments::run_once does in-process: zero, snapshot, launch, restore.
      auto once = [&] {
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (job.params[i].zero && job.params[i].extent) memory::zero(*ctx_, address(i), job.params[i].extent);
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (saved[i].size()) memory::copy(*ctx_, saved[i].data(), address(i), job.params[i].extent);
        W::launch(*ctx_, function_, job, params.data());
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (saved[i].size()) memory::copy(*ctx_, address(i), saved[i].data(), job.params[i].extent);
      };
      if (!job.timed) { // the verification run: the outputs it must write are poisoned first
        std::optional<std::chrono::steady_clock::time_point> deadline;
        if (job.timeout_ms > 0) deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(job.timeout_ms);
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (job.params[i].poison && job.params[i].extent >= 4 && aligned_to_4(address(i)))
            memory::fill32(*ctx_, address(i), 0xFFFFFFFFu, job.params[i].extent / 4);
        once();
        ctx_->synchronize("the candidate's first run", deadline);
        return send_frame(fd, tag_values, encode_values({}));
      }
      const event_bench_options o{.graph = job.graph, .flush_factor = job.flush_factor,
                                  .batch_below_us = job.batch_below_us};
      if (!bench_ || o.graph != bench_options_.graph || o.flush_factor != bench_options_.flush_factor ||
          o.batch_below_us != bench_options_.batch_below_us) {
        bench_.emplace(device_, o);
        bench_options_ = o;
      }
      // The benchmarker's own first run is the candidate's first run: it waits for it, bounded by the
      // parent's COTUNE_BENCH_TIMEOUT_MS (set here: the parent may have set it in code), before it
      // launches again, so the second launch is the moment to tell the parent that the kernel ends
      // ('F'). A first run of the worker's own before the benchmark cost one more kernel run and wait
      // per candidate than in-process measuring.
      const auto timeout = knobs().bench.timeout_ms.scoped(job.timeout_ms);
      std::size_t launches = 0;
      bool told = true;
      const measurement m = bench_->measure(
          [&] {
            if (++launches == 2) told = send_frame(fd, tag_first_run, {});
            once();
          },
          job.bench);
      return told && send_frame(fd, tag_values, encode_values(as_values(m)));
    } catch (const timeout_error& e) {
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::timeout)) + e.what());
      return false;
    } catch (const unmappable& e) { // the same for every candidate: the parent measures in-process
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::unmappable)) + e.what());
      return true;
    } catch (const std::exception& e) {
      if (auto lost = W::lost(*ctx_)) { // the in-process message speaks of this process's context
        (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::context_lost)) +
                                             fmt::format("it failed with {}", *lost));
        return false;
      }
      const auto kind = dynamic_cast<const launch_error*>(&e) ? worker_failure::launch : worker_failure::error;
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(kind)) + e.what());
      return true;
    }
  }

private:
  /// Makes `job`'s image and entry current: one already loaded (the most recent first), or a new load,
  /// the least recently used beyond `kept_modules` unloaded.
  void load(const worker_job& job) {
    auto same = [&](const loaded& m) { return m.symbol == job.symbol && m.image == job.image; };
    auto it = std::find_if(modules_.begin(), modules_.end(), same);
    if (it == modules_.end()) {
      loaded m;
      m.module = W::load(*ctx_, job.image);
      try {
        m.function = W::entry(*ctx_, m.module, job.symbol);
      } catch (...) { // a failed lookup is retried, never launched
        W::unload(*ctx_, m.module);
        throw;
      }
      m.image = job.image;
      m.symbol = job.symbol;
      modules_.insert(modules_.begin(), std::move(m));
      if (modules_.size() > kept_modules) {
        W::unload(*ctx_, modules_.back().module);
        modules_.pop_back();
      }
    } else if (it != modules_.begin()) {
      std::rotate(modules_.begin(), it, it + 1);
    }
    loaded& m = modules_.front();
    if (job.shared_bytes > m.shared_allowed) {
      W::allow_shared(*ctx_, m.function, job.shared_bytes);
      m.shared_allowed = job.shared_bytes;
    }
    function_ = m.function;
  }

  /// The kernel's parameter values, device addresses mapped into this process. Mappings the job
  /// does not use are closed (the parent may have freed that memory).
  std::vector<std::string> map_params(const worker_job& job) {
    std::map<std::string, pointer> used;
    std::vector<std::string> out;
    for (const auto& p : job.params) {
      if (!p.device) {
        out.push_back(p.bytes);
        continue;
      }
      const std::string key(p.handle.data(), p.handle.size());
      auto it = mapped_.find(key);
      pointer base{};
      if (it != mapped_.end()) {
        base = it->second;
      } else {
        try {
          base = W::open_ipc(*ctx_, p.handle);
        } catch (const std::exception& e) {
          throw unmappable(e.what());
        }
        mapped_.emplace(key, base);
      }
      used.emplace(key, base);
      const pointer ptr = gpu::detail::advance(base, p.offset);
      out.emplace_back(reinterpret_cast<const char*>(&ptr), sizeof ptr);
    }
    for (auto& [key, base] : mapped_)
      if (!used.count(key)) W::close_ipc(*ctx_, base);
    mapped_ = std::move(used);
    return out;
  }

  const context* ctx_;
  device device_;
  std::optional<typename W::benchmarker> bench_; ///< remade when the parent's timing knobs change
  event_bench_options bench_options_{};
  /// A loaded image and its entry.
  struct loaded {
    typename W::module module{};
    typename W::function function{};
    std::string image, symbol;
    std::uint32_t shared_allowed = 0;
  };
  std::vector<loaded> modules_; ///< most recently used first
  typename W::function function_{}; ///< the current job's entry
  std::map<std::string, pointer> mapped_;
};

/// The worker's `W` for a GPU backend's API table `Api` (gpu/rtc_backend.hpp) and its benchmarker:
/// the module calls are the loaded kernel's (`Api::kernel_calls`), the IPC mapping the sharing's.
template <class Api, class Benchmarker>
struct rtc_worker {
  using calls = typename Api::kernel_calls;
  using memory = typename calls::memory;
  using context = typename memory::context;
  using benchmarker = Benchmarker;
  using module = typename calls::module;
  using function = typename calls::function;
  static constexpr const worker_kind& kind = Api::worker_kind;

  [[nodiscard]] static typename Api::device open(int ordinal) {
    const auto* lib = Api::try_library();
    if (!lib) throw error(Api::library_error());
    (void)lib->context(ordinal);
    return Api::describe_device(*lib, ordinal);
  }
  [[nodiscard]] static module load(const context& ctx, const std::string& image) {
    module m{};
    ctx.check(calls::load(ctx, image, &m), "loading the candidate in its isolation worker");
    return m;
  }
  static void unload(const context& ctx, module m) noexcept { calls::unload(ctx, m); }
  [[nodiscard]] static function entry(const context& ctx, module m, const std::string& symbol) {
    function f{};
    ctx.check(calls::entry(ctx, &f, m, symbol.c_str()), calls::entry_call);
    return f;
  }
  /// Opts into `bytes` of dynamic shared memory (where the runtime needs that; harmless below its
  /// no-opt-in limit).
  static void allow_shared(const context& ctx, function f, std::uint32_t bytes) {
    if (bytes == 0) return;
    ctx.check(calls::allow_shared(ctx, f, static_cast<int>(bytes)), "opting into dynamic shared memory");
  }
  [[nodiscard]] static auto open_ipc(const context& ctx, const std::array<char, 64>& handle) {
    return Api::sharing::open(ctx, handle);
  }
  static void close_ipc(const context& ctx, typename memory::pointer p) noexcept { Api::sharing::close(ctx, p); }
  static void launch(const context& ctx, function f, const worker_job& job, void** params) {
    const launch_grid grid{.x = job.grid[0], .y = job.grid[1], .z = job.grid[2], .shared_bytes = job.shared_bytes};
    const block_dims block{static_cast<int>(job.block[0]), static_cast<int>(job.block[1]), static_cast<int>(job.block[2])};
    ctx.check(calls::launch(ctx, f, grid, block, ctx.stream(), params), "launching the candidate in its isolation worker");
  }
  /// After a failure: the sticky error that lost the context, if that is what happened.
  [[nodiscard]] static std::optional<std::string> lost(const context& ctx) {
    const auto r = calls::synchronize_device(ctx);
    if (!calls::sticky(r)) return std::nullopt;
    return ctx.library().error_text(r);
  }
};

/// The worker's whole life; never returns.
template <class W>
[[noreturn]] void isolation_worker_main(int fd, int ordinal) {
  cotune::detail::fork_process::close_inherited(fd);
  std::optional<isolation_server<W>> server;
  try {
    auto d = W::open(ordinal);
    server.emplace(W::memory::context_of(ordinal), std::move(d));
  } catch (const std::exception& e) {
    (void)send_frame(fd, tag_not_ready, fmt::format("{} device {} in the worker: {}", W::kind.runtime, ordinal, e.what()));
    ::_exit(2);
  }
  if (!send_frame(fd, tag_ready, {})) ::_exit(0);
  for (;;) {
    frame f = receive_frame(fd, std::chrono::steady_clock::time_point::max());
    if (f.end != frame::ending::ok) ::_exit(0); // the parent is gone or done
    if (f.tag != tag_job) ::_exit(3);
    worker_job job;
    try {
      job = decode_job(f.payload);
    } catch (const std::exception& e) {
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::error)) + e.what());
      continue;
    }
    if (!server->serve(fd, job)) ::_exit(0);
  }
}

/// Becomes `W`'s worker when the parent asked for one (its variable is set); else returns at once.
template <class W>
void become_worker_if_asked() {
  const char* v = std::getenv(W::kind.variable);
  if (!v) return;
  const auto parsed = parse_worker_env(v);
  ::unsetenv(W::kind.variable); // processes this one starts are not workers
  if (!parsed) return;
  isolation_worker_main<W>(parsed->first, parsed->second);
}

} // namespace cotune::gpu::detail
