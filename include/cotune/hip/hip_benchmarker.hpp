#pragma once
/// \file `cotune::hip::hip_benchmarker`: the GPU benchmarker (gpu/rtc_benchmarker.hpp: do_bench's
/// semantics) over hipEvents and hipGraphs, with an L2 flush sized from the device; kernels under
/// bench.batch_below_us are timed in hipGraphs of N launches. This file holds HIP's timing calls, and
/// the entry of HIP's isolation worker (gpu/isolation_worker.hpp), which must be in every program that
/// can measure on HIP: a worker is this program (gpu/isolation.hpp says why).
///
/// On an AMD GPU a memory fault usually ends the process from inside the runtime (ROCm reports it and
/// aborts): in a worker that is a crash the parent records, as for a segfault.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <string_view>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/gpu/event_timing.hpp>
#include <cotune/gpu/isolation_worker.hpp>
#include <cotune/gpu/rtc_benchmarker.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_backend.hpp>
#include <cotune/hip/hip_knobs.hpp>

namespace cotune::hip {

namespace detail {

/// The runtime's event and graph calls, for the GPU benchmarker.
struct timing_calls {
  using memory = memory_runtime;
  using device = hip::device;
  using result = hip_error;
  using event = hip_event;
  using graph = hip_graph;
  using graph_exec = hip_graph_exec;
  static constexpr std::string_view create_call = "hipEventCreate", record_call = "hipEventRecord",
                                    elapsed_call = "hipEventElapsedTime", capture_call = "hipStreamBeginCapture",
                                    graph_launch_call = "hipGraphLaunch";

  [[nodiscard]] static const device_context& context_of(int ordinal) { return runtime().context(ordinal); }
  [[nodiscard]] static const hip_knob_group& knobs() { return hip_knobs(); }
  [[nodiscard]] static bool ok(hip_error r) noexcept { return r == hip_success; }
  static hip_error create_event(const device_context& c, hip_event* e) { return c.api().event_create(e); }
  static void destroy_event(const device_context& c, hip_event e) noexcept { (void)c.api().event_destroy(e); }
  static hip_error record(const device_context& c, hip_event e) { return c.api().event_record(e, c.stream()); }
  static hip_error wait(const device_context& c, hip_event e) { return c.api().event_synchronize(e); }
  static hip_error elapsed(const device_context& c, float* ms, hip_event a, hip_event b) {
    return c.api().event_elapsed_time(ms, a, b);
  }
  static hip_error begin_capture(const device_context& c) {
    return c.api().stream_begin_capture(c.stream(), hip_stream_capture_mode_relaxed);
  }
  static hip_error end_capture(const device_context& c, hip_graph* g) { return c.api().stream_end_capture(c.stream(), g); }
  static hip_error instantiate(const device_context& c, hip_graph_exec* x, hip_graph g) {
    return c.api().graph_instantiate(x, g, nullptr, nullptr, 0);
  }
  static hip_error launch_graph(const device_context& c, hip_graph_exec x) { return c.api().graph_launch(x, c.stream()); }
  static void destroy(const device_context& c, hip_graph_exec x, hip_graph g) noexcept {
    if (x) (void)c.api().graph_exec_destroy(x);
    if (g) (void)c.api().graph_destroy(g);
  }
  static void after_first_run(const device_context&) noexcept {} // the stream is all cotune queued on
};

} // namespace detail

/// How a hip_benchmarker measures (defaults from the `hip.*` and `bench.*` knobs where unset).
using hip_bench_options = gpu::event_bench_options;

/// Times callables on one HIP device.
class hip_benchmarker : public gpu::rtc_benchmarker<detail::timing_calls> {
public:
  using rtc_benchmarker::rtc_benchmarker;
  hip_benchmarker(const hip_backend&, const device& d, options o = {}) : rtc_benchmarker(d, o) {}
};

static_assert(ReportsMeasurement<hip_benchmarker>);

namespace detail {

/// Before main(): becomes the HIP isolation worker when the parent asked for one; else nothing.
[[gnu::constructor(101), gnu::used]] static void become_hip_isolation_worker_if_asked() {
  gpu::detail::become_worker_if_asked<gpu::detail::rtc_worker<backend_api, hip_benchmarker>>();
}

} // namespace detail

} // namespace cotune::hip
