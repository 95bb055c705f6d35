#pragma once
/// \file Summaries of timing samples: quantiles by linear interpolation and do_bench's return modes.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/core.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

/// Quantile q of sorted samples, interpolating linearly between neighbours (spec §8.4, numpy's default).
[[nodiscard]] constexpr double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw error("quantile of no samples");
  if (!(q >= 0.0 && q <= 1.0)) throw error(fmt::format("quantile {} is out of range: quantiles must be in [0, 1]", q));
  const double p = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(p);
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = p - static_cast<double>(lo);
  const double a = sorted[lo], b = sorted[hi];
  // An exact position returns its sample: interpolating with weight 0 would turn a +inf neighbour
  // (a failed run) into NaN, since 0 * inf is NaN. Equal neighbours (+inf ones too) are the answer.
  if (frac == 0.0 || a == b) return a;
  // a + frac * (b - a), kept within [a, b]: (1 - frac) * a + frac * b rounds off equal or close
  // neighbours (0.8 * 0.1 + 0.2 * 0.1 is 0.10000000000000002), so that p20 came out above the median
  // of samples that were all 0.1. Kept within its neighbours, a higher quantile is never the lower value.
  return std::clamp(a + frac * (b - a), a, b);
}

/// Throws cotune::error unless every quantile is in [0, 1] (checked before any time is spent measuring).
constexpr void check_quantiles(const std::vector<double>& quantiles) {
  for (double q : quantiles)
    if (!(q >= 0.0 && q <= 1.0)) throw error(fmt::format("quantile {} is out of range: quantiles must be in [0, 1]", q));
}

/// Summarises samples as `opts` asks: one value per quantile, or the return mode.
[[nodiscard]] constexpr std::vector<double> summarize(std::vector<double> samples, const bench_options& opts) {
  if (samples.empty()) throw error("no timing samples to summarise");
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  if (!opts.quantiles.empty()) {
    std::vector<double> out;
    for (double q : opts.quantiles) out.push_back(quantile_of_sorted(sorted, q));
    return out;
  }
  switch (opts.mode) {
  case return_mode::all: return samples;
  case return_mode::min: return {sorted.front()};
  case return_mode::max: return {sorted.back()};
  case return_mode::median: return {quantile_of_sorted(sorted, 0.5)};
  case return_mode::mean:
  default: return {std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size())};
  }
}

} // namespace cotune
