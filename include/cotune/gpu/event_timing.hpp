#pragma once
/// \file `cotune::gpu::timed_measurement`: the GPU benchmarkers' measuring loop, written once for
/// every GPU runtime (spec §8.2, §8.3; issue 12). A runtime supplies a `Timer` (CUDA:
/// cuda_benchmarker.hpp, HIP: hip_benchmarker.hpp):
///
///     t.reserve(n)          at least n events exist
///     t.record(i)           records event i on the timed stream
///     t.wait(i, what)       waits for event i
///     t.elapsed(i, j)       milliseconds between events i and j
///     t.flush()             queues the L2 flush (nothing when the flush is off)
///     t.begin_capture()     starts capturing the stream into a graph (relaxed mode)
///     t.end_capture(ok)     ends it; with ok, instantiates the graph and returns whether that worked
///                           (an invalidated capture is false, not an error); without, discards it
///     t.replay()            launches the instantiated graph on the stream
///     t.drop_graph()        destroys the graph (before a new capture)
///
/// The method, from a first estimate (5 back-to-back launches between one event pair, no flush):
/// - per-launch (estimate >= batch_below): an event pair around each launch, the L2 flushed before
///   each, so every run starts cold (Triton's do_bench);
/// - batch (estimate < batch_below, or always_batch): N launches per sample (N from batch_target),
///   as one graph replay ("graph-batch xN") or, where the callable may not be captured or the
///   capture fails, N plain calls ("back-to-back xN"); each sample is the pair's time over N. The L2
///   is flushed ONCE before each batch, outside the timed pair: the first launch of a batch starts
///   cold and the others find what their predecessor left in L2, as back-to-back calls of a short
///   kernel do in a program. A flush per launch cannot be separated from the kernel's time there.
/// Samples are taken in chunks of about a millisecond, the next chunk queued before the last is
/// read, until the stopping rule (bench/stopping_rule.hpp) says.
///
/// Warm-up: `bench_options::warmup_ms` of untimed runs (Triton's 25 ms) on a cold device. A device
/// that finished a measurement less than `warm_within_ms` ago (`device_warmth`) already has its
/// clocks up, and warms up for at most `warm_warmup_ms` (the `bench.warm_warmup_ms` knob): in a
/// tuning, where candidates follow one another on each device, that is every measurement but the
/// first.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/bench/stopping_rule.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/gpu/device_memory.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::gpu {

/// How timed_measurement chooses and sizes its method (the benchmarker's options over the knobs).
struct timing_settings {
  /// Kernels whose estimate is under this are timed in batches; 0 = never.
  double batch_below_ms = 0.2;
  /// Batch every kernel, whatever its estimate (the cuda.graph / hip.graph knobs).
  bool always_batch = false;
  /// A batch lasts about this long. A graph replay's fixed cost (launch and event, a few us) is then
  /// under 1% of a sample, and ten samples cost ~10 ms.
  double batch_target_ms = 1.0;
  /// At most this many launches per batch (the graph's size).
  std::size_t max_batch = 1000;
  /// At most this many samples.
  std::size_t max_repeats = 10000;
  /// The device finished a measurement moments ago (`device_warmth`): the warm-up takes at most
  /// this long (ms). Unset: the whole `bench_options::warmup_ms`.
  std::optional<double> warm_warmup_ms{};
};

/// A device that finished a measurement less than this long ago (ms) is warm.
inline constexpr double warm_within_ms = 100.0;

/// Whether a device is warm: it finished a measurement less than `within_ms` ago, so its clocks are
/// up and a long warm-up would repeat what that measurement did. One per device and process (`of`):
/// every GPU benchmarker of that device reads it, and a measurement that ended anywhere on the device
/// counts, also one taken in its isolation worker (gpu/isolation.hpp touches it when a worker's
/// measurement returns). Before it was one per benchmarker, and an isolated tuning's finals, the
/// first measurements of this process's benchmarker, warmed up for the whole bench.warmup_ms on a
/// device the worker had just kept busy (S2 on the H200: about 20 ms more than with isolation off).
/// Thread-safe.
class device_warmth {
public:
  device_warmth() = default;
  device_warmth(const device_warmth&) = delete;
  device_warmth& operator=(const device_warmth&) = delete;

  /// The process's record of device `ordinal` of runtime `runtime` ("CUDA", "HIP").
  [[nodiscard]] COTUNE_DECL static device_warmth& of(std::string_view runtime, int ordinal);

  [[nodiscard]] COTUNE_DECL bool warm(double within_ms) const;
  /// A measurement on the device just ended.
  void touch() noexcept {
    last_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

private:
  static constexpr std::chrono::steady_clock::rep never = std::numeric_limits<std::chrono::steady_clock::rep>::min();
  std::atomic<std::chrono::steady_clock::rep> last_{never};
};

/// How a GPU benchmarker measures (defaults from the knobs where unset): `cuda_bench_options` and
/// `hip_bench_options` are this type.
struct event_bench_options {
  /// Time every kernel in graph batches, whatever its length; unset = the runtime's `graph` knob.
  std::optional<bool> graph{};
  /// L2 flush size as a multiple of the device's L2; unset = the runtime's `flush_factor` knob.
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
  /// A batch lasts about this long (timing_settings::batch_target_ms says why 1 ms).
  double batch_target_ms = 1.0;

  /// The L2 flush size in bytes for a device with `l2_bytes` of L2, rounded up to whole 32-bit words
  /// (the flush is a 32-bit memset).
  [[nodiscard]] std::size_t flush_bytes(std::int64_t l2_bytes, double flush_factor_knob) const {
    const double factor = flush_factor.value_or(flush_factor_knob);
    return (static_cast<std::size_t>(static_cast<double>(l2_bytes) * factor) + 3) / 4 * 4;
  }
};

/// When a first run started at `started` must have finished: `timeout_ms` later (the
/// `bench.timeout_ms` knob); never when it is 0.
[[nodiscard]] inline std::optional<std::chrono::steady_clock::time_point>
first_run_deadline(std::chrono::steady_clock::time_point started, std::int64_t timeout_ms) {
  if (timeout_ms <= 0) return std::nullopt;
  return started + std::chrono::milliseconds(timeout_ms);
}

/// A GPU benchmarker's timing settings from its options, its runtime's `graph` knob, the bench knobs
/// and its device's warmth.
template <class Options>
[[nodiscard]] timing_settings settings_from(const Options& o, bool graph_knob, const device_warmth& warmth,
                                            double batch_below_us_knob, double warm_warmup_ms_knob,
                                            double warm_within_ms) {
  timing_settings s{.batch_below_ms = o.batch_below_us.value_or(batch_below_us_knob) / 1000.0,
                    .always_batch = o.graph.value_or(graph_knob),
                    .batch_target_ms = o.batch_target_ms,
                    .max_batch = o.max_graph_launches,
                    .max_repeats = o.max_repeats};
  if (warmth.warm(warm_within_ms)) s.warm_warmup_ms = warm_warmup_ms_knob;
  return s;
}

namespace detail {

/// Queues samples `one(i)` (events 2i and 2i + 1) in chunks of about `chunk_ms`, reads each as its
/// pair's time over `per_sample`, and stops as `rule` says. Returns the samples; sets m.stopped.
template <class Timer, class Enqueue>
std::vector<double> sample(Timer& t, Enqueue&& one, std::size_t per_sample, double sample_ms, const stopping_rule& rule,
                           measurement& m) {
  using clock = std::chrono::steady_clock;
  constexpr double chunk_ms = 1.0; // a stop is at most one chunk late; fewer chunks, fewer host waits
  const std::size_t chunk = std::clamp<std::size_t>(static_cast<std::size_t>(chunk_ms / std::max(sample_ms, 1e-6)), 1, 64);
  noise_tracker noise = rule.tracker();
  std::vector<double> samples;
  std::size_t queued = 0;
  auto enqueue = [&] {
    const std::size_t end = std::min(queued + chunk, rule.max_samples);
    t.reserve(2 * end); // events are made as needed: a noise stop after 10 samples needs 20, not 20000
    for (; queued < end; ++queued) one(queued);
  };
  auto read_to = [&](std::size_t end) {
    t.wait(2 * end - 1, "timing the measured runs");
    for (std::size_t i = samples.size(); i < end; ++i) {
      samples.push_back(t.elapsed(2 * i, 2 * i + 1) / static_cast<double>(per_sample));
      noise.add(samples.back());
    }
  };
  const auto start = clock::now();
  enqueue();
  while (m.stopped == stop_reason::none) {
    const std::size_t done = queued;
    enqueue(); // keeps the device busy while the host reads the previous chunk
    read_to(done);
    m.stopped = rule.check(noise, std::chrono::duration<double, std::milli>(clock::now() - start).count());
  }
  // The chunk queued last ran anyway: its samples count too.
  if (queued > samples.size()) read_to(queued);
  m.rsd = noise.rsd();
  m.samples = samples.size();
  return samples;
}

/// Captures `n` calls of `fn` into the timer's graph; false if the capture could not be made.
template <class Timer>
bool capture(Timer& t, const std::function<void()>& fn, std::size_t n) {
  t.drop_graph();
  t.begin_capture();
  try {
    for (std::size_t i = 0; i < n; ++i) fn();
  } catch (...) {
    t.end_capture(false);
    throw;
  }
  return t.end_capture(true);
}

} // namespace detail

/// Measures `fn` (which has run once already, its errors surfaced) as the file comment says.
/// `opts.capturable == false` keeps batches out of graphs.
template <class Timer>
[[nodiscard]] measurement timed_measurement(Timer& t, const std::function<void()>& fn, const bench_options& opts,
                                            const timing_settings& s) {
  t.reserve(2);
  t.record(0);
  for (int i = 0; i < 5; ++i) fn();
  t.record(1);
  t.wait(1, "timing the estimate runs");
  // Guard: Triton divides by the estimate; a zero (below the events' resolution) would be a division
  // by zero. A nanosecond caps the repetition counts instead.
  const double estimate = std::max(t.elapsed(0, 1) / 5.0, 1e-6);
  measurement m;
  // The warm-up shares the measured runs' cap, so that the guard above cannot ask for millions.
  const double warmup_ms = s.warm_warmup_ms ? std::min(opts.warmup_ms, *s.warm_warmup_ms) : opts.warmup_ms;
  m.warmup_runs = std::min(s.max_repeats, static_cast<std::size_t>(std::max(1.0, warmup_ms / estimate)));
  for (std::size_t i = 0; i < m.warmup_runs; ++i) fn();

  std::vector<double> samples;
  if (!s.always_batch && !(estimate < s.batch_below_ms)) {
    m.method = "per-launch";
    const auto rule = stopping_rule::from(
        opts, std::min(s.max_repeats, static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate))));
    samples = detail::sample(
        t,
        [&](std::size_t i) {
          t.flush();
          t.record(2 * i);
          fn();
          t.record(2 * i + 1);
        },
        1, estimate, rule, m);
  } else {
    // The estimate of a launch-bound kernel is its launch rate, not its time: a probe replay of the
    // first graph measures the time, and a graph far shorter than the target is captured again.
    std::size_t n = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(s.batch_target_ms / estimate)), 1,
                                            std::max<std::size_t>(s.max_batch, 1));
    bool graph = opts.capturable.value_or(true) && detail::capture(t, fn, n);
    double per_run = estimate;
    if (graph) {
      t.record(0);
      t.replay(); // also uploads the graph, which the first replay would otherwise pay for
      t.record(1);
      t.wait(1, "timing the probe replay");
      per_run = std::max(t.elapsed(0, 1) / static_cast<double>(n), 1e-6);
      const auto wanted = std::min(std::max<std::size_t>(s.max_batch, 1),
                                   static_cast<std::size_t>(std::ceil(s.batch_target_ms / per_run)));
      if (wanted > 2 * n) {
        n = wanted;
        graph = detail::capture(t, fn, n);
        if (graph) t.replay();
      }
    }
    m.batch = n;
    m.method = fmt::format("{} x{}", graph ? "graph-batch" : "back-to-back", n);
    const double batch_ms = per_run * static_cast<double>(n);
    const auto rule = stopping_rule::from(
        opts, std::min(s.max_repeats, static_cast<std::size_t>(std::max(1.0, opts.rep_ms / batch_ms))));
    samples = detail::sample(
        t,
        [&](std::size_t i) {
          t.flush();
          t.record(2 * i);
          if (graph)
            t.replay();
          else
            for (std::size_t k = 0; k < n; ++k) fn();
          t.record(2 * i + 1);
        },
        n, batch_ms, rule, m);
  }
  m.times = summarize(std::move(samples), opts);
  return m;
}

/// A GPU benchmarker's `bench` and `measure`, its options, L2 flush and warmth, written once for every
/// runtime. `R` is the runtime's device memory (gpu/device_memory.hpp) and `Derived` (a friend)
/// supplies `after_first_run()`, `runtime_knobs()` (its `graph` and `flush_factor` knobs) and a
/// `timer` (the Timer above) constructed from `Derived&`.
template <class Derived, DeviceMemoryRuntime R>
class event_benchmarker {
public:
  using context_type = typename R::context;

  /// do_bench: the summary of `measure`.
  [[nodiscard]] std::vector<double> bench(const std::function<void()>& fn, const bench_options& opts) {
    return measure(fn, opts).times;
  }

  /// `fn` once (its errors surface here, and a first run longer than COTUNE_BENCH_TIMEOUT_MS is a
  /// timeout_error), an estimate, warm-up, then samples per launch (flushed) or per graph batch, until
  /// the stopping rule says. The result names the method, the noise and why sampling stopped.
  [[nodiscard]] measurement measure(const std::function<void()>& fn, const bench_options& opts) {
    auto& self = static_cast<Derived&>(*this);
    check_quantiles(opts.quantiles);
    const auto started = std::chrono::steady_clock::now();
    const auto& ctx = *context_;
    ctx.make_current();
    const auto deadline = first_run_deadline(started, knobs().bench.timeout_ms.get());
    fn();
    ctx.make_current();
    ctx.synchronize("the first run of the benchmarked kernel", deadline);
    self.after_first_run();
    ensure_flush_buffer();
    typename Derived::timer t{self};
    measurement m = timed_measurement(t, fn, opts, settings());
    warmth_->touch();
    m.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return m;
  }

  /// The stream the timed work must go to.
  [[nodiscard]] auto stream() const noexcept { return context_->stream(); }
  [[nodiscard]] int ordinal() const noexcept { return context_->ordinal(); }
  /// The L2 flush size, in bytes, that the next benchmark will use.
  [[nodiscard]] std::size_t flush_bytes() const {
    return options_.flush_bytes(l2_bytes_, Derived::runtime_knobs().flush_factor.get());
  }

protected:
  event_benchmarker(const context_type& ctx, std::int64_t l2_bytes, event_bench_options o)
      : context_(&ctx), l2_bytes_(l2_bytes), options_(o), warmth_(&device_warmth::of(R::name, ctx.ordinal())) {}

  [[nodiscard]] timing_settings settings() const {
    return settings_from(options_, Derived::runtime_knobs().graph.get(), *warmth_, knobs().bench.batch_below_us.get(),
                         knobs().bench.warm_warmup_ms.get(), warm_within_ms);
  }

  void ensure_flush_buffer() {
    const std::size_t words = flush_bytes() / 4;
    if (flush_.size() == words) return;
    flush_ = device_buffer<R, std::uint32_t>();
    if (words) flush_ = device_buffer<R, std::uint32_t>(*context_, words);
  }

  /// Overwrites the flush buffer (on the stream), evicting the timed kernel's data from L2; a new value
  /// each time, so that no cache can keep the old line.
  void flush() {
    if (!flush_.empty()) R::fill32(*context_, flush_.data(), ++flush_round_, flush_.size());
  }

  const context_type* context_;
  std::int64_t l2_bytes_;
  event_bench_options options_;
  device_warmth* warmth_; ///< when this benchmarker's device last finished a measurement (device_warmth::of)
  device_buffer<R, std::uint32_t> flush_;
  std::uint32_t flush_round_ = 0;
};

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/event_timing.ipp>
#endif
