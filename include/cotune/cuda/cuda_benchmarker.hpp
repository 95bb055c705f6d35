#pragma once
/// \file `cotune::cuda::cuda_benchmarker`: do_bench's semantics (spec §8.2) with CUDA events, an L2
/// flush sized from the device, and a graph-replay mode for microsecond kernels (spec §8.3).
///
/// The callable must queue its work on the device's cotune stream (`stream()`); the backend's
/// `launch` does. Errors in the timed kernels surface as launch_error; a sticky one (an illegal
/// address) says that the device's CUDA context is lost.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <cuda.h>
#include <fmt/format.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::cuda {

namespace detail {

/// Timing events, created on demand and kept for later benchmarks.
class event_pool {
public:
  explicit event_pool(const device_context& ctx) : context_(&ctx) {}
  event_pool(const event_pool&) = delete;
  event_pool& operator=(const event_pool&) = delete;
  ~event_pool() {
    if (events_.empty()) return;
    const auto& api = context_->api();
    CUcontext current = nullptr;
    if (api.ctx_get_current(&current) != CUDA_SUCCESS || current != context_->context())
      (void)api.ctx_set_current(context_->context());
    for (CUevent e : events_) (void)api.event_destroy(e);
  }
  /// At least `n` events; the context must be current.
  const std::vector<CUevent>& reserve(std::size_t n) {
    while (events_.size() < n) {
      CUevent e = nullptr;
      context_->check(context_->api().event_create(&e, CU_EVENT_DEFAULT), "cuEventCreate");
      events_.push_back(e);
    }
    return events_;
  }

private:
  const device_context* context_;
  std::vector<CUevent> events_;
};

/// A captured graph and its executable form, destroyed together.
struct graph_guard {
  const driver_api& api;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~graph_guard() {
    if (exec) (void)api.graph_exec_destroy(exec);
    if (graph) (void)api.graph_destroy(graph);
  }
};

} // namespace detail

/// How a cuda_benchmarker measures (defaults from the knobs where unset).
struct cuda_bench_options {
  /// Replay a CUDA graph of many runs instead of timing each run; unset = the `cuda.graph` knob.
  std::optional<bool> graph{};
  /// L2 flush size as a multiple of the device's L2; unset = the `cuda.flush_factor` knob.
  std::optional<double> flush_factor{};
  /// At most this many timed runs (event pairs). Triton has no cap; with the default flush (one
  /// 60 MB L2 on an H200) each run costs at least ~20 us, so a 100 ms budget asks at most ~5000 and
  /// the cap binds only with the flush off, where 10^4 samples already pin a microsecond kernel's
  /// quantiles.
  std::size_t max_repeats = 10000;
  /// At most this many launches captured in one graph. Measured on an H200 (the probe in
  /// tests/cuda/test_cuda_benchmarker.cpp): an empty kernel timed 0.835 us per launch in graphs of
  /// 1000 and of 10000 launches alike, while bench() took 14.5 ms against 186 ms.
  std::size_t max_graph_launches = 1000;
  /// Timed graph replays, as in do_bench_cudagraph.
  int graph_replays = 10;
};

/// Times callables on one CUDA device.
class cuda_benchmarker {
public:
  using options = cuda_bench_options;

  /// Benchmarks on `d` (its primary context and cotune stream). Throws cotune::error without a driver.
  explicit cuda_benchmarker(const device& d, options o = {})
      : context_(&driver().context(d.ordinal)), l2_bytes_(d.l2_bytes), options_(o),
        events_(std::make_unique<detail::event_pool>(*context_)) {}
  cuda_benchmarker(const cuda_backend&, const device& d, options o = {}) : cuda_benchmarker(d, o) {}

  cuda_benchmarker(cuda_benchmarker&&) noexcept = default;
  cuda_benchmarker& operator=(cuda_benchmarker&&) noexcept = default;

  /// The stream the timed work must go to.
  [[nodiscard]] CUstream stream() const noexcept { return context_->stream(); }
  [[nodiscard]] int ordinal() const noexcept { return context_->ordinal(); }
  /// The L2 flush size, in bytes, that the next benchmark will use.
  [[nodiscard]] std::size_t flush_bytes() const {
    const double factor = options_.flush_factor.has_value() ? *options_.flush_factor : cuda_knobs().flush_factor.get();
    // Rounded up to whole 32-bit words: the flush is a cuMemsetD32Async.
    return (static_cast<std::size_t>(static_cast<double>(l2_bytes_) * factor) + 3) / 4 * 4;
  }

  /// do_bench: `fn` once (its errors surface here, and a first run longer than COTUNE_BENCH_TIMEOUT_MS
  /// is a timeout_error), then either per-run event pairs with an L2 flush before each run, or, in
  /// graph mode, replays of a graph of many runs. Returns milliseconds as `opts` asks.
  [[nodiscard]] std::vector<double> bench(const std::function<void()>& fn, const bench_options& opts) {
    check_quantiles(opts.quantiles);
    const device_context& ctx = *context_;
    ctx.make_current();
    const auto timeout = std::chrono::milliseconds(knobs().bench.timeout_ms.get());
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (timeout.count() > 0) deadline = std::chrono::steady_clock::now() + timeout;
    fn();
    ctx.make_current();
    ctx.synchronize("the first run of the benchmarked kernel", deadline);
    ctx.check(ctx.api().ctx_synchronize(), "synchronizing after the first run");
    if (options_.graph.value_or(cuda_knobs().graph.get())) return bench_graph(fn, opts);

    const auto& api = ctx.api();
    const CUstream s = ctx.stream();
    ensure_flush_buffer();
    const auto& ev = events_->reserve(2);
    auto elapsed = [&](CUevent a, CUevent b) {
      float ms = 0.0f;
      ctx.check(api.event_elapsed_time(&ms, a, b), "cuEventElapsedTime");
      return static_cast<double>(ms);
    };

    ctx.check(api.event_record(ev[0], s), "cuEventRecord");
    for (int i = 0; i < 5; ++i) {
      flush();
      fn();
    }
    ctx.check(api.event_record(ev[1], s), "cuEventRecord");
    ctx.check(api.event_synchronize(ev[1]), "timing the estimate runs");
    // Guard: Triton divides by the estimate; a zero (below the events' resolution) would be a
    // division by zero. A nanosecond caps the repetition counts instead.
    const double estimate = std::max(elapsed(ev[0], ev[1]) / 5.0, 1e-6);
    // The warm-up shares the measured runs' cap, so that the guard above cannot ask for millions.
    const auto n_warmup =
        std::min(options_.max_repeats, static_cast<std::size_t>(std::max(1.0, opts.warmup_ms / estimate)));
    const auto n_repeat =
        std::min(options_.max_repeats, static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate)));

    const auto& pairs = events_->reserve(2 * n_repeat);
    for (std::size_t i = 0; i < n_warmup; ++i) fn();
    for (std::size_t i = 0; i < n_repeat; ++i) {
      flush();
      ctx.check(api.event_record(pairs[2 * i], s), "cuEventRecord");
      fn();
      ctx.check(api.event_record(pairs[2 * i + 1], s), "cuEventRecord");
    }
    ctx.check(api.event_synchronize(pairs[2 * n_repeat - 1]), "timing the measured runs");
    std::vector<double> samples;
    samples.reserve(n_repeat);
    for (std::size_t i = 0; i < n_repeat; ++i) samples.push_back(elapsed(pairs[2 * i], pairs[2 * i + 1]));
    return summarize(std::move(samples), opts);
  }

private:
  /// do_bench_cudagraph: an estimate from 5 plain runs, one graph of n runs (n from the budget),
  /// then timed replays, each sample being a replay's time over n. No flush: it would be captured too.
  std::vector<double> bench_graph(const std::function<void()>& fn, const bench_options& opts) {
    const device_context& ctx = *context_;
    const auto& api = ctx.api();
    const CUstream s = ctx.stream();
    const auto& ev = events_->reserve(2);
    auto elapsed = [&](CUevent a, CUevent b) {
      float ms = 0.0f;
      ctx.check(api.event_elapsed_time(&ms, a, b), "cuEventElapsedTime");
      return static_cast<double>(ms);
    };
    ctx.check(api.event_record(ev[0], s), "cuEventRecord");
    for (int i = 0; i < 5; ++i) fn();
    ctx.check(api.event_record(ev[1], s), "cuEventRecord");
    ctx.check(api.event_synchronize(ev[1]), "timing the estimate runs");
    const double estimate = elapsed(ev[0], ev[1]) / 5.0;
    const std::size_t n = std::min(options_.max_graph_launches,
                                   estimate <= 0.0 ? std::size_t{1000}
                                                   : static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate)));

    detail::graph_guard g{api};
    // Relaxed: hooks inside `fn` may allocate (restore_value's snapshot), which the stricter
    // capture modes forbid while a capture is under way.
    ctx.check(api.stream_begin_capture(s, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    try {
      for (std::size_t i = 0; i < n; ++i) fn();
    } catch (...) {
      (void)api.stream_end_capture(s, &g.graph);
      throw;
    }
    ctx.make_current();
    ctx.check(api.stream_end_capture(s, &g.graph), "capturing the benchmark graph (cuStreamEndCapture)");
    ctx.check(api.graph_instantiate(&g.exec, g.graph, 0), "cuGraphInstantiate");
    // One untimed replay uploads the graph; do_bench_cudagraph times its first replay too.
    ctx.check(api.graph_launch(g.exec, s), "cuGraphLaunch");
    std::vector<double> samples;
    for (int r = 0; r < options_.graph_replays; ++r) {
      ctx.check(api.event_record(ev[0], s), "cuEventRecord");
      ctx.check(api.graph_launch(g.exec, s), "cuGraphLaunch");
      ctx.check(api.event_record(ev[1], s), "cuEventRecord");
      ctx.check(api.event_synchronize(ev[1]), "timing a graph replay");
      samples.push_back(elapsed(ev[0], ev[1]) / static_cast<double>(n));
    }
    return summarize(std::move(samples), opts);
  }

  void ensure_flush_buffer() {
    const std::size_t words = flush_bytes() / 4;
    if (flush_.size() != words) {
      flush_ = device_buffer<std::uint32_t>();
      if (words) flush_ = device_buffer<std::uint32_t>(*context_, words);
    }
  }

  /// Overwrites the flush buffer (on the stream), evicting the timed kernel's data from L2.
  void flush() {
    if (flush_.empty()) return;
    context_->check(context_->api().memset_d32_async(flush_.data(), ++flush_round_, flush_.size(), context_->stream()),
                    "flushing the L2 (cuMemsetD32Async)");
  }

  const device_context* context_;
  std::int64_t l2_bytes_;
  options options_;
  std::unique_ptr<detail::event_pool> events_;
  device_buffer<std::uint32_t> flush_;
  std::uint32_t flush_round_ = 0;
};

static_assert(Benchmarker<cuda_benchmarker>);

} // namespace cotune::cuda
