#pragma once
/// \file The `Benchmarker` concept and what it is asked for (do_bench's options, spec §8.2).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <cotune/core/errors.hpp>

namespace cotune {

/// How do_bench summarises its samples when no quantiles are asked for.
enum class return_mode { min, max, mean, median, all };

/// What to measure: budgets in milliseconds, when to stop early, and the summary wanted.
struct bench_options {
  double warmup_ms = 25.0; ///< Triton's default
  double rep_ms = 100.0;   ///< Triton's default
  /// If non-empty, the result is one value per quantile (each in [0, 1]); else `mode` applies.
  std::vector<double> quantiles{};
  return_mode mode = return_mode::mean;
  /// Sampling stops once the samples' relative standard deviation is under this (after
  /// `min_samples`), or when rep_ms is spent; 0 = budget only. Unset: the `bench.noise_target` knob.
  std::optional<double> noise_target{};
  /// The noise test applies from this many samples on. Unset: the `bench.min_samples` knob.
  std::optional<std::size_t> min_samples{};
  /// At least this many samples, even past `rep_ms`: a kernel slower than its budget is then not judged by
  /// one run (screening asks for 3, tune/measure_strategy.hpp). Unset: 1 (Triton's do_bench).
  std::optional<std::size_t> required_samples{};
  /// Whether a GPU benchmarker may capture the callable into a graph and replay it: true when each
  /// call only queues device work on the benchmarker's stream. False (e.g. host-side hooks, or
  /// restore_value's per-call snapshot buffers) keeps batches as plain back-to-back calls. Unset: true.
  std::optional<bool> capturable{};
};

/// Times a callable on one device; returns milliseconds (one per quantile, or as `mode` says).
/// The callable runs the kernel once; it may throw, and the exception propagates.
template <class B>
concept Benchmarker = requires(B& b, const std::function<void()>& fn, const bench_options& opts) {
  { b.bench(fn, opts) } -> std::same_as<std::vector<double>>;
};

} // namespace cotune
