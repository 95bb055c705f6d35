#pragma once
/// \file The `Benchmarker` concept and what it is asked for (do_bench's options, spec §8.2).

#include <concepts>
#include <functional>
#include <string_view>
#include <vector>

#include <cotune/core/errors.hpp>

namespace cotune {

/// How do_bench summarises its samples when no quantiles are asked for.
enum class return_mode { min, max, mean, median, all };

/// What to measure: budgets in milliseconds and the summary wanted.
struct bench_options {
  double warmup_ms = 25.0; ///< Triton's default
  double rep_ms = 100.0;   ///< Triton's default
  /// If non-empty, the result is one value per quantile (each in [0, 1]); else `mode` applies.
  std::vector<double> quantiles{};
  return_mode mode = return_mode::mean;
};

/// Times a callable on one device; returns milliseconds (one per quantile, or as `mode` says).
/// The callable runs the kernel once; it may throw, and the exception propagates.
template <class B>
concept Benchmarker = requires(B& b, const std::function<void()>& fn, const bench_options& opts) {
  { b.bench(fn, opts) } -> std::same_as<std::vector<double>>;
};

} // namespace cotune
