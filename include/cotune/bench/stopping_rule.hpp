#pragma once
/// \file `cotune::stopping_rule`: when a measurement has enough samples (nvbench's stdrel criterion).
/// Pure: it sees samples and the time spent, never a clock, so CI tests it with seeded synthetic
/// samples. Every benchmarker (host, CUDA, HIP) feeds its samples to one `noise_tracker` and asks
/// the rule after each one.
///
///     noise_tracker noise = rule.tracker();
///     for (;;) {
///       noise.add(time_one_sample());
///       if (rule.check(noise, ms_spent) != stop_reason::none) break;
///     }

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

/// Why a measurement stopped taking samples.
enum class stop_reason {
  none,   ///< not stopped: take another sample
  noise,  ///< the samples' relative standard deviation fell under the target
  stable, ///< the relative standard deviation stopped changing above the target (an inherently noisy kernel)
  budget, ///< the time budget (rep_ms) was spent
  cap,    ///< the sample count reached its cap (rep_ms over the first estimate, or max_repeats)
};

/// The name shown in tables and JSON: "noise", "stable", "budget", "cap" ("" for none).
[[nodiscard]] constexpr std::string_view to_string(stop_reason r) noexcept {
  switch (r) {
  case stop_reason::noise: return "noise";
  case stop_reason::stable: return "stable";
  case stop_reason::budget: return "budget";
  case stop_reason::cap: return "cap";
  case stop_reason::none: break;
  }
  return "";
}

/// Running mean and relative standard deviation of samples (Welford's update: no catastrophic
/// cancellation on microsecond samples), with the last `window` values of the relative standard
/// deviation for the stability test.
class noise_tracker {
public:
  explicit noise_tracker(std::size_t window = 16) : recent_(std::max<std::size_t>(window, 2), 0.0) {}

  /// Adds one sample (milliseconds, or any unit: the rsd has none).
  void add(double x) noexcept;

  [[nodiscard]] std::size_t count() const noexcept { return n_; }
  [[nodiscard]] double mean() const noexcept { return mean_; }
  /// Sample standard deviation over the mean (n - 1 in the variance); 0 with fewer than 2 samples or a
  /// zero mean (a kernel below the clock's resolution has no measurable noise).
  [[nodiscard]] double rsd() const noexcept {
    if (n_ < 2 || !(mean_ > 0.0)) return 0.0;
    return std::sqrt(std::max(0.0, m2_ / static_cast<double>(n_ - 1))) / mean_;
  }
  /// The rsd's own relative spread over the last `window` samples (nvbench's convergence test); only
  /// meaningful once `count() >= window()`.
  [[nodiscard]] double rsd_drift() const noexcept;
  [[nodiscard]] std::size_t window() const noexcept { return recent_.size(); }

private:
  std::size_t n_ = 0;
  double mean_ = 0.0, m2_ = 0.0;
  std::vector<double> recent_;
};

/// When to stop sampling: under the noise target after at least `min_samples`, or when the noise
/// has settled above it, or when the budget or the cap is reached, whichever comes first.
struct stopping_rule {
  /// Target relative standard deviation of the samples; 0 = no noise stopping (budget and cap only).
  double noise_target = 0.005;
  /// The noise tests apply from this many samples on (the budget and the cap always apply).
  std::size_t min_samples = 10;
  /// At most this many samples (at least 1 is always taken).
  std::size_t max_samples = 10000;
  /// At least this many samples, whatever the budget and the cap say (bench_options::required_samples).
  std::size_t required_samples = 1;
  /// Wall-clock budget of the sampling, in ms.
  double budget_ms = 100.0;
  /// The stability test's window, in samples; it applies from twice this many samples on.
  std::size_t stable_window = 16;
  /// The rsd has settled when its relative spread over the window is under this. nvbench uses 5%
  /// over 64+ noise values; a window of 16 keeps a 1 ms kernel's noisy measurement near 32 ms.
  double stable_drift = 0.05;

  /// The rule for `opts` (its noise_target and min_samples, else the bench.* knobs), with at most
  /// `max_samples` samples (or opts.required_samples, if more) and `opts.rep_ms` of wall time.
  [[nodiscard]] static stopping_rule from(const bench_options& opts, std::size_t max_samples);

  /// A tracker with this rule's stability window.
  [[nodiscard]] noise_tracker tracker() const { return noise_tracker(stable_window); }

  /// Whether to stop after the samples in `noise`, `spent_ms` into the sampling.
  [[nodiscard]] stop_reason check(const noise_tracker& noise, double spent_ms) const noexcept;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/bench/stopping_rule.ipp>
#endif
