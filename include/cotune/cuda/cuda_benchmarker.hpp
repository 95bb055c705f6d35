#pragma once
/// \file `cotune::cuda::cuda_benchmarker`: do_bench's semantics (spec §8.2) with CUDA events and an
/// L2 flush sized from the device; kernels under bench.batch_below_us are timed in CUDA graphs of N
/// launches, so that launch overhead does not enter their time (the loop is the GPU layer's,
/// gpu/event_timing.hpp, which says what the flush means in each method).
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
#include <cotune/bench/measurement.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/event_timing.hpp>
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

} // namespace detail

/// How a cuda_benchmarker measures (defaults from the knobs where unset).
struct cuda_bench_options {
  /// Time every kernel in graph batches, whatever its length; unset = the `cuda.graph` knob.
  std::optional<bool> graph{};
  /// L2 flush size as a multiple of the device's L2; unset = the `cuda.flush_factor` knob.
  std::optional<double> flush_factor{};
  /// Kernels whose first estimate is under this (us) are timed in batches; 0 = never; unset = the
  /// `bench.batch_below_us` knob.
  std::optional<double> batch_below_us{};
  /// At most this many timed samples (event pairs). Triton has no cap; with the default flush (one
  /// 60 MB L2 on an H200) each run costs at least ~20 us, so a 100 ms budget asks at most ~5000 and
  /// the cap binds only with the flush off, where 10^4 samples already pin a microsecond kernel's
  /// quantiles.
  std::size_t max_repeats = 10000;
  /// At most this many launches captured in one batch graph. Measured on an H200 (the probe in
  /// tests/cuda/test_cuda_benchmarker.cpp): an empty kernel timed 0.835 us per launch in graphs of
  /// 1000 and of 10000 launches alike, while bench() took 14.5 ms against 186 ms.
  std::size_t max_graph_launches = 1000;
  /// A batch lasts about this long (gpu::timing_settings::batch_target_ms says why 1 ms).
  double batch_target_ms = 1.0;
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

  /// do_bench: the summary of `measure`.
  [[nodiscard]] std::vector<double> bench(const std::function<void()>& fn, const bench_options& opts) {
    return measure(fn, opts).times;
  }

  /// `fn` once (its errors surface here, and a first run longer than COTUNE_BENCH_TIMEOUT_MS is a
  /// timeout_error), an estimate, warm-up, then samples per launch (flushed) or per graph batch, until
  /// the stopping rule says. The result names the method, the noise and why sampling stopped.
  [[nodiscard]] measurement measure(const std::function<void()>& fn, const bench_options& opts) {
    check_quantiles(opts.quantiles);
    const auto started = std::chrono::steady_clock::now();
    const device_context& ctx = *context_;
    ctx.make_current();
    const auto timeout = std::chrono::milliseconds(knobs().bench.timeout_ms.get());
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (timeout.count() > 0) deadline = started + timeout;
    fn();
    ctx.make_current();
    ctx.synchronize("the first run of the benchmarked kernel", deadline);
    ctx.check(ctx.api().ctx_synchronize(), "synchronizing after the first run");
    ensure_flush_buffer();
    timer t{*this};
    measurement m = gpu::timed_measurement(t, fn, opts, settings());
    warmth_.touch();
    m.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return m;
  }

private:
  /// The GPU layer's Timer over CUDA events and graphs.
  struct timer {
    cuda_benchmarker& b;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    explicit timer(cuda_benchmarker& owner) : b(owner) {}
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;
    ~timer() { drop_graph(); }
    [[nodiscard]] const device_context& ctx() const { return *b.context_; }
    void reserve(std::size_t n) { (void)b.events_->reserve(n); }
    void record(std::size_t i) {
      ctx().check(ctx().api().event_record(b.events_->reserve(i + 1)[i], ctx().stream()), "cuEventRecord");
    }
    void wait(std::size_t i, const char* what) { ctx().check(ctx().api().event_synchronize(b.events_->reserve(i + 1)[i]), what); }
    [[nodiscard]] double elapsed(std::size_t i, std::size_t j) {
      const auto& ev = b.events_->reserve(std::max(i, j) + 1);
      float ms = 0.0f;
      ctx().check(ctx().api().event_elapsed_time(&ms, ev[i], ev[j]), "cuEventElapsedTime");
      return static_cast<double>(ms);
    }
    void flush() { b.flush(); }
    void begin_capture() {
      // Relaxed: hooks inside `fn` may allocate (restore_value's snapshot), which the stricter
      // capture modes forbid while a capture is under way.
      ctx().check(ctx().api().stream_begin_capture(ctx().stream(), CU_STREAM_CAPTURE_MODE_RELAXED),
                  "cuStreamBeginCapture");
    }
    bool end_capture(bool ok) {
      const CUresult r = ctx().api().stream_end_capture(ctx().stream(), &graph);
      if (!ok || r != CUDA_SUCCESS || !graph) return false; // an invalidated capture: batches go back to back
      ctx().make_current();
      if (ctx().api().graph_instantiate(&exec, graph, 0) != CUDA_SUCCESS) {
        exec = nullptr;
        return false;
      }
      return true;
    }
    void replay() { ctx().check(ctx().api().graph_launch(exec, ctx().stream()), "cuGraphLaunch"); }
    void drop_graph() {
      const auto& api = ctx().api();
      if (exec) (void)api.graph_exec_destroy(exec);
      if (graph) (void)api.graph_destroy(graph);
      exec = nullptr;
      graph = nullptr;
    }
  };

  [[nodiscard]] gpu::timing_settings settings() const {
    return gpu::settings_from(options_, cuda_knobs().graph.get(), warmth_, knobs().bench.batch_below_us.get(),
                              knobs().bench.warm_warmup_ms.get(), gpu::warm_within_ms);
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
  gpu::device_warmth warmth_;
};

static_assert(ReportsMeasurement<cuda_benchmarker>);

} // namespace cotune::cuda

// The isolation worker's entry runs before main() in every program that can measure on CUDA (it
// needs cuda_benchmarker, so it comes after it; cuda/isolation.hpp says why a worker is this program).
#include <cotune/cuda/isolation_worker.hpp>
