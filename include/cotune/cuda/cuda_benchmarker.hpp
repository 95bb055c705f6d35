#pragma once
/// \file `cotune::cuda::cuda_benchmarker`: the GPU benchmarker (gpu/rtc_benchmarker.hpp: do_bench's
/// semantics, spec §8.2) over CUDA events and graphs, with an L2 flush sized from the device; kernels
/// under bench.batch_below_us are timed in CUDA graphs of N launches, so that launch overhead does not
/// enter their time (gpu/event_timing.hpp says what the flush means in each method). This file holds
/// CUDA's timing calls, and the entry of CUDA's isolation worker (gpu/isolation_worker.hpp), which must
/// be in every program that can measure on CUDA: a worker is this program (gpu/isolation.hpp says why).
///
/// The callable must queue its work on the device's cotune stream (`stream()`); the backend's
/// `launch` does. Errors in the timed kernels surface as launch_error; a sticky one (an illegal
/// address) says that the device's CUDA context is lost.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <string_view>

#include <cuda.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/event_timing.hpp>
#include <cotune/gpu/isolation_worker.hpp>
#include <cotune/gpu/rtc_benchmarker.hpp>

namespace cotune::cuda {

namespace detail {

/// The driver's event and graph calls, for the GPU benchmarker.
struct timing_calls {
  using memory = memory_runtime;
  using device = cuda::device;
  using result = CUresult;
  using event = CUevent;
  using graph = CUgraph;
  using graph_exec = CUgraphExec;
  static constexpr std::string_view create_call = "cuEventCreate", record_call = "cuEventRecord",
                                    elapsed_call = "cuEventElapsedTime", capture_call = "cuStreamBeginCapture",
                                    graph_launch_call = "cuGraphLaunch";

  [[nodiscard]] static const device_context& context_of(int ordinal) { return driver().context(ordinal); }
  [[nodiscard]] static const cuda_knob_group& knobs() { return cuda_knobs(); }
  [[nodiscard]] static bool ok(CUresult r) noexcept { return r == CUDA_SUCCESS; }
  static CUresult create_event(const device_context& c, CUevent* e) { return c.api().event_create(e, CU_EVENT_DEFAULT); }
  static void destroy_event(const device_context& c, CUevent e) noexcept { (void)c.api().event_destroy(e); }
  static CUresult record(const device_context& c, CUevent e) { return c.api().event_record(e, c.stream()); }
  static CUresult wait(const device_context& c, CUevent e) { return c.api().event_synchronize(e); }
  static CUresult elapsed(const device_context& c, float* ms, CUevent a, CUevent b) {
    return c.api().event_elapsed_time(ms, a, b);
  }
  static CUresult begin_capture(const device_context& c) {
    return c.api().stream_begin_capture(c.stream(), CU_STREAM_CAPTURE_MODE_RELAXED);
  }
  static CUresult end_capture(const device_context& c, CUgraph* g) { return c.api().stream_end_capture(c.stream(), g); }
  static CUresult instantiate(const device_context& c, CUgraphExec* x, CUgraph g) { return c.api().graph_instantiate(x, g, 0); }
  static CUresult launch_graph(const device_context& c, CUgraphExec x) { return c.api().graph_launch(x, c.stream()); }
  static void destroy(const device_context& c, CUgraphExec x, CUgraph g) noexcept {
    if (x) (void)c.api().graph_exec_destroy(x);
    if (g) (void)c.api().graph_destroy(g);
  }
  /// Waits for the whole context too (the first run may have queued work elsewhere in it).
  static void after_first_run(const device_context& c) { c.check(c.api().ctx_synchronize(), "synchronizing after the first run"); }
};

} // namespace detail

/// How a cuda_benchmarker measures (defaults from the `cuda.*` and `bench.*` knobs where unset).
using cuda_bench_options = gpu::event_bench_options;

/// Times callables on one CUDA device.
class cuda_benchmarker : public gpu::rtc_benchmarker<detail::timing_calls> {
public:
  using rtc_benchmarker::rtc_benchmarker;
  cuda_benchmarker(const cuda_backend&, const device& d, options o = {}) : rtc_benchmarker(d, o) {}
};

static_assert(ReportsMeasurement<cuda_benchmarker>);

namespace detail {

/// Before main(): becomes the CUDA isolation worker when the parent asked for one; else nothing.
[[gnu::constructor(101), gnu::used]] static void become_cuda_isolation_worker_if_asked() {
  gpu::detail::become_worker_if_asked<gpu::detail::rtc_worker<backend_api, cuda_benchmarker>>();
}

} // namespace detail

} // namespace cotune::cuda
