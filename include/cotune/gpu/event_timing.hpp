#pragma once
/// \file `cotune::gpu::event_timed_runs` and `graph_timed_runs`: do_bench's measuring loops (spec
/// §8.2, §8.3) over GPU events, written once for every GPU runtime. A runtime supplies a `Timer`
/// (CUDA: cuda_benchmarker.hpp, HIP: hip_benchmarker.hpp):
///
///     t.reserve(n)          at least n events exist
///     t.record(i)           records event i on the timed stream
///     t.wait(i, what)       waits for event i
///     t.elapsed(i, j)       milliseconds between events i and j
///     t.flush()             queues the L2 flush (nothing when the flush is off)
///     t.begin_capture()     starts capturing the stream into a graph (relaxed mode)
///     t.end_capture(ok)     ends it; with ok, instantiates the graph (else only discards it)
///     t.replay()            launches the instantiated graph on the stream

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/summary.hpp>

namespace cotune::gpu {

/// Per-run event pairs with a flush before each run: an estimate from 5 runs, warm-up and repetition
/// counts from the budgets (each at most `max_repeats`), then the quantiles of the samples.
template <class Timer>
[[nodiscard]] std::vector<double> event_timed_runs(Timer& t, const std::function<void()>& fn, const bench_options& opts,
                                                   std::size_t max_repeats) {
  t.reserve(2);
  t.record(0);
  for (int i = 0; i < 5; ++i) {
    t.flush();
    fn();
  }
  t.record(1);
  t.wait(1, "timing the estimate runs");
  // Guard: Triton divides by the estimate; a zero (below the events' resolution) would be a division
  // by zero. A nanosecond caps the repetition counts instead.
  const double estimate = std::max(t.elapsed(0, 1) / 5.0, 1e-6);
  // The warm-up shares the measured runs' cap, so that the guard above cannot ask for millions.
  const auto n_warmup = std::min(max_repeats, static_cast<std::size_t>(std::max(1.0, opts.warmup_ms / estimate)));
  const auto n_repeat = std::min(max_repeats, static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate)));
  t.reserve(2 * n_repeat);
  for (std::size_t i = 0; i < n_warmup; ++i) fn();
  for (std::size_t i = 0; i < n_repeat; ++i) {
    t.flush();
    t.record(2 * i);
    fn();
    t.record(2 * i + 1);
  }
  t.wait(2 * n_repeat - 1, "timing the measured runs");
  std::vector<double> samples;
  samples.reserve(n_repeat);
  for (std::size_t i = 0; i < n_repeat; ++i) samples.push_back(t.elapsed(2 * i, 2 * i + 1));
  return summarize(std::move(samples), opts);
}

/// do_bench_cudagraph: an estimate from 5 plain runs, one graph of n runs (n from the budget, at most
/// `max_launches`), then `replays` timed replays, each sample a replay's time over n. No flush: it
/// would be captured too.
template <class Timer>
[[nodiscard]] std::vector<double> graph_timed_runs(Timer& t, const std::function<void()>& fn, const bench_options& opts,
                                                   std::size_t max_launches, int replays) {
  t.reserve(2);
  t.record(0);
  for (int i = 0; i < 5; ++i) fn();
  t.record(1);
  t.wait(1, "timing the estimate runs");
  const double estimate = t.elapsed(0, 1) / 5.0;
  const std::size_t n =
      std::min(max_launches, estimate <= 0.0 ? std::size_t{1000}
                                             : static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate)));
  t.begin_capture();
  try {
    for (std::size_t i = 0; i < n; ++i) fn();
  } catch (...) {
    t.end_capture(false);
    throw;
  }
  t.end_capture(true);
  t.replay(); // one untimed replay uploads the graph
  std::vector<double> samples;
  for (int r = 0; r < replays; ++r) {
    t.record(0);
    t.replay();
    t.record(1);
    t.wait(1, "timing a graph replay");
    samples.push_back(t.elapsed(0, 1) / static_cast<double>(n));
  }
  return summarize(std::move(samples), opts);
}

} // namespace cotune::gpu
