#pragma once
/// \file The bodies of bench/host_benchmarker.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <chrono>

#include <fmt/core.h>

#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

COTUNE_DECL measurement host_benchmarker::measure(const std::function<void()>& fn, const bench_options& opts) {
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  check_quantiles(opts.quantiles);
  const auto first = clock::now();
  fn();
  // A candidate whose single run exceeds the deadline is not measured further: its repetitions
  // would take far longer still. (An in-process CPU kernel cannot be preempted, only not rerun.)
  if (const auto limit = knobs().bench.timeout_ms.get(); limit > 0 && ms_since(first) > static_cast<double>(limit))
    throw timeout_error(
        fmt::format(COTUNE_FMT("host benchmarker: one run took {:.0f} ms, more than COTUNE_BENCH_TIMEOUT_MS={} ms; "
                               "the candidate is not measured further (raise the knob to measure it)"),
                    ms_since(first), limit));
  if (options_.flush_bytes) flush_.resize(options_.flush_bytes);

  // The estimate: 5 calls, or fewer once they have taken the measurement's budget (a kernel slower than
  // its budget: 5 calls of a 50 ms kernel were 250 ms of a screening pass of 10 ms).
  auto t0 = clock::now();
  int calls = 0;
  while (calls < 5 && (calls == 0 || ms_since(t0) < opts.rep_ms)) {
    flush();
    fn();
    ++calls;
  }
  // Guard: a kernel faster than the clock's resolution would make the estimate 0, and Triton
  // divides by it. One nanosecond caps the repetition count instead.
  const double estimate = std::max(ms_since(t0) / calls, 1e-6);
  const auto n_warmup = static_cast<std::size_t>(std::max(1.0, opts.warmup_ms / estimate));
  const auto n_repeat = std::min(options_.max_repeats,
                                 static_cast<std::size_t>(std::max(1.0, opts.rep_ms / estimate)));
  const stopping_rule rule = stopping_rule::from(opts, n_repeat);
  for (std::size_t i = 0; i < n_warmup; ++i) fn();
  measurement m{.method = "host", .warmup_runs = n_warmup};
  noise_tracker noise = rule.tracker();
  std::vector<double> samples;
  samples.reserve(std::min<std::size_t>(n_repeat, 4096));
  const auto sampling = clock::now();
  while (m.stopped == stop_reason::none) {
    flush();
    auto start = clock::now();
    fn();
    samples.push_back(ms_since(start));
    noise.add(samples.back());
    m.stopped = rule.check(noise, ms_since(sampling));
  }
  m.rsd = noise.rsd();
  m.samples = samples.size();
  m.times = summarize(std::move(samples), opts);
  m.wall_ms = ms_since(first);
  return m;
}

} // namespace cotune
