#pragma once
/// \file The bodies of bench/stopping_rule.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/bench/stopping_rule.hpp>

namespace cotune {

COTUNE_DECL void noise_tracker::add(double x) noexcept {
  ++n_;
  const double d = x - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (x - mean_);
  recent_[(n_ - 1) % recent_.size()] = rsd();
}

COTUNE_DECL double noise_tracker::rsd_drift() const noexcept {
  const double now = rsd();
  if (!(now > 0.0)) return 0.0;
  double ss = 0.0;
  for (double v : recent_) ss += (v - now) * (v - now);
  return std::sqrt(ss / static_cast<double>(recent_.size())) / now;
}

COTUNE_DECL stopping_rule stopping_rule::from(const bench_options& opts, std::size_t max_samples) {
  stopping_rule r;
  r.noise_target = opts.noise_target.value_or(knobs().bench.noise_target.get());
  r.min_samples = opts.min_samples.value_or(static_cast<std::size_t>(knobs().bench.min_samples.get()));
  if (!(r.noise_target >= 0.0))
    throw error(fmt::format(
        COTUNE_FMT("bench_options::noise_target={} is out of range; it must be at least 0 (0 = off)"), r.noise_target));
  r.required_samples = std::max<std::size_t>(1, opts.required_samples.value_or(1));
  r.max_samples = std::max({std::size_t{1}, max_samples, r.required_samples});
  r.budget_ms = opts.rep_ms;
  return r;
}

COTUNE_DECL stop_reason stopping_rule::check(const noise_tracker& noise, double spent_ms) const noexcept {
  const std::size_t n = noise.count();
  if (n == 0 || n < required_samples) return stop_reason::none;
  if (n >= max_samples) return stop_reason::cap;
  if (noise_target > 0.0 && n >= std::max<std::size_t>(min_samples, 2)) {
    if (noise.rsd() <= noise_target) return stop_reason::noise;
    if (n >= 2 * noise.window() && noise.rsd_drift() < stable_drift) return stop_reason::stable;
  }
  if (spent_ms >= budget_ms) return stop_reason::budget;
  return stop_reason::none;
}

} // namespace cotune
