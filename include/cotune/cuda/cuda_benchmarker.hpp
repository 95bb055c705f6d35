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
#include <fmt/core.h>

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

/// How a cuda_benchmarker measures (defaults from the `cuda.*` and `bench.*` knobs where unset).
using cuda_bench_options = gpu::event_bench_options;

/// Times callables on one CUDA device.
class cuda_benchmarker : public gpu::event_benchmarker<cuda_benchmarker, memory_runtime> {
public:
  using options = cuda_bench_options;

  /// Benchmarks on `d` (its primary context and cotune stream). Throws cotune::error without a driver.
  explicit cuda_benchmarker(const device& d, options o = {})
      : event_benchmarker(driver().context(d.ordinal), d.l2_bytes, o),
        events_(std::make_unique<detail::event_pool>(*context_)) {}
  cuda_benchmarker(const cuda_backend&, const device& d, options o = {}) : cuda_benchmarker(d, o) {}

  cuda_benchmarker(cuda_benchmarker&&) noexcept = default;
  cuda_benchmarker& operator=(cuda_benchmarker&&) noexcept = default;

private:
  friend class gpu::event_benchmarker<cuda_benchmarker, memory_runtime>;

  [[nodiscard]] static const cuda_knob_group& runtime_knobs() { return cuda_knobs(); }

  /// Waits for the whole context too (the first run may have queued work elsewhere in it).
  void after_first_run() const {
    context_->check(context_->api().ctx_synchronize(), "synchronizing after the first run");
  }

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

  std::unique_ptr<detail::event_pool> events_;
};

static_assert(ReportsMeasurement<cuda_benchmarker>);

} // namespace cotune::cuda

// The isolation worker's entry runs before main() in every program that can measure on CUDA (it
// needs cuda_benchmarker, so it comes after it; gpu/isolation.hpp says why a worker is this program).
#include <cotune/cuda/isolation_worker.hpp>
