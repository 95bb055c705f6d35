#pragma once
/// \file `cotune::hip::hip_benchmarker`: do_bench's semantics with hipEvents and an L2 flush sized from
/// the device; kernels under bench.batch_below_us are timed in hipGraphs of N launches (the loop is
/// the GPU layer's, gpu/event_timing.hpp, as for CUDA).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/gpu/event_timing.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_backend.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::hip {

/// How a hip_benchmarker measures (defaults from the `hip.*` and `bench.*` knobs where unset).
using hip_bench_options = gpu::event_bench_options;

/// Times callables on one HIP device.
class hip_benchmarker : public gpu::event_benchmarker<hip_benchmarker, memory_runtime> {
public:
  using options = hip_bench_options;

  explicit hip_benchmarker(const device& d, options o = {})
      : event_benchmarker(runtime().context(d.ordinal), d.l2_bytes, o) {}
  hip_benchmarker(const hip_backend&, const device& d, options o = {}) : hip_benchmarker(d, o) {}
  hip_benchmarker(hip_benchmarker&& o) noexcept : event_benchmarker(std::move(o)), events_(std::move(o.events_)) {
    o.events_.clear();
  }
  hip_benchmarker& operator=(hip_benchmarker&&) = delete;
  hip_benchmarker(const hip_benchmarker&) = delete;
  ~hip_benchmarker() {
    if (events_.empty()) return;
    const auto& api = context_->api();
    (void)api.set_device(context_->ordinal());
    for (hip_event e : events_) (void)api.event_destroy(e);
  }

private:
  friend class gpu::event_benchmarker<hip_benchmarker, memory_runtime>;

  [[nodiscard]] static const hip_knob_group& runtime_knobs() { return hip_knobs(); }
  void after_first_run() const {}

  /// The GPU layer's Timer over hipEvents and hipGraphs.
  struct timer {
    hip_benchmarker& b;
    hip_graph graph = nullptr;
    hip_graph_exec exec = nullptr;
    explicit timer(hip_benchmarker& owner) : b(owner) {}
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;
    ~timer() { drop_graph(); }
    [[nodiscard]] const device_context& ctx() const { return *b.context_; }
    void reserve(std::size_t n) {
      while (b.events_.size() < n) {
        hip_event e = nullptr;
        ctx().check(ctx().api().event_create(&e), "hipEventCreate");
        b.events_.push_back(e);
      }
    }
    void record(std::size_t i) { ctx().check(ctx().api().event_record(b.events_[i], ctx().stream()), "hipEventRecord"); }
    void wait(std::size_t i, const char* what) { ctx().check(ctx().api().event_synchronize(b.events_[i]), what); }
    [[nodiscard]] double elapsed(std::size_t i, std::size_t j) {
      float ms = 0.0f;
      ctx().check(ctx().api().event_elapsed_time(&ms, b.events_[i], b.events_[j]), "hipEventElapsedTime");
      return static_cast<double>(ms);
    }
    void flush() { b.flush(); }
    void begin_capture() {
      ctx().check(ctx().api().stream_begin_capture(ctx().stream(), hip_stream_capture_mode_relaxed),
                  "hipStreamBeginCapture");
    }
    bool end_capture(bool ok) {
      const hip_error r = ctx().api().stream_end_capture(ctx().stream(), &graph);
      if (!ok || r != hip_success || !graph) return false; // an invalidated capture: batches go back to back
      ctx().make_current();
      if (ctx().api().graph_instantiate(&exec, graph, nullptr, nullptr, 0) != hip_success) {
        exec = nullptr;
        return false;
      }
      return true;
    }
    void replay() { ctx().check(ctx().api().graph_launch(exec, ctx().stream()), "hipGraphLaunch"); }
    void drop_graph() {
      const auto& api = b.context_->api();
      if (exec) (void)api.graph_exec_destroy(exec);
      if (graph) (void)api.graph_destroy(graph);
      exec = nullptr;
      graph = nullptr;
    }
  };

  std::vector<hip_event> events_;
};

static_assert(ReportsMeasurement<hip_benchmarker>);

} // namespace cotune::hip

// The isolation worker's entry runs before main() in every program that can measure on HIP (it needs
// hip_benchmarker, so it comes after it; gpu/isolation.hpp says why a worker is this program).
#include <cotune/hip/isolation_worker.hpp>
