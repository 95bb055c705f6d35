#pragma once
/// \file `cotune::measurement`: what a benchmark found and how (the method, the noise, why it
/// stopped), and `ReportsMeasurement`, the optional capability of benchmarkers that return it.
///
///     if constexpr (cotune::ReportsMeasurement<Bench>) {
///       const cotune::measurement m = bench.measure(fn, opts);
///       record(m.times, m.method, m.rsd);
///     }

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/stopping_rule.hpp>
#include <cotune/detail/config.hpp>

namespace cotune {

/// One benchmark's result and how it was obtained.
struct measurement {
  /// Milliseconds per run, summarised as the options asked (what `bench()` returns).
  std::vector<double> times{};
  /// How the samples were taken: "host" (per call, host clock), "per-launch" (an event pair around
  /// each launch, an L2 flush before each), "graph-batch xN" (a GPU graph of N launches per sample,
  /// divided by N), or "back-to-back xN" (N plain launches between one event pair, where a graph
  /// could not be captured).
  std::string method{};
  /// Relative standard deviation of the samples (each sample a run, or a batch's mean run).
  double rsd = 0.0;
  /// Samples taken.
  std::size_t samples = 0;
  /// Runs per sample: 1, or N for a batch.
  std::size_t batch = 1;
  /// Untimed warm-up runs of the callable.
  std::size_t warmup_runs = 0;
  /// Why sampling stopped.
  stop_reason stopped = stop_reason::none;
  /// Wall time of the whole measurement, in ms (first run, estimate, warm-up, sampling).
  double wall_ms = 0.0;
};

namespace detail {
inline constexpr std::string_view measurement_methods[] = {"", "host", "per-launch", "graph-batch", "back-to-back"};
} // namespace detail

/// A measurement as numbers only, for a channel that carries doubles (an isolated run's reply): its
/// three timings (median, p20, p80), then rsd, samples, method and batch. Other shapes of `times`
/// (a return mode, other quantiles) come back unchanged, without the rest.
[[nodiscard]] COTUNE_DECL std::vector<double> as_values(const measurement& m);

/// The measurement `as_values` wrote; plain timings (a benchmarker without `measure`) give a
/// measurement with those times and no method.
[[nodiscard]] COTUNE_DECL measurement measurement_of_values(std::vector<double> values);

/// A benchmarker that can also say how it measured: `measure(fn, opts).times == bench(fn, opts)`
/// (for one and the same measurement).
template <class B>
concept ReportsMeasurement =
    Benchmarker<B> && requires(B& b, const std::function<void()>& fn, const bench_options& opts) {
      { b.measure(fn, opts) } -> std::same_as<measurement>;
    };

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/bench/measurement.ipp>
#endif
