#pragma once
/// \file `cotune::host_benchmarker`: do_bench's semantics (spec §8.2) on the CPU, with the host clock.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstring>
#include <functional>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/bench/stopping_rule.hpp>
#include <cotune/detail/config.hpp>

namespace cotune {

/// Times CPU callables: one untimed call (absorbs first-touch costs; errors surface there), an
/// estimate from 5 calls, then warm-up and measured repetitions sized from the millisecond budgets,
/// the measured ones ending early once their noise is under the target (bench/stopping_rule.hpp).
class host_benchmarker {
public:
  struct options {
    /// Bytes written before each measured run to evict the caches; 0 = no flush. Off by default:
    /// CPU kernels are usually tuned warm, and a flush of an LLC-sized buffer costs more than many kernels.
    std::size_t flush_bytes = 0;
    /// At most this many measured runs. Triton has no cap; a 10 ns kernel with a 100 ms budget would
    /// otherwise store 10^7 samples.
    std::size_t max_repeats = 100000;
  };

  host_benchmarker() = default;
  explicit host_benchmarker(options o) : options_(o) {}

  /// do_bench: the summary of `measure`.
  [[nodiscard]] std::vector<double> bench(const std::function<void()>& fn, const bench_options& opts) {
    return measure(fn, opts).times;
  }

  /// One untimed call, an estimate from 5, warm-up runs for `warmup_ms`, then timed calls until the
  /// stopping rule says (noise target, rep_ms of wall time, or rep_ms over the estimate calls).
  [[nodiscard]] COTUNE_DECL measurement measure(const std::function<void()>& fn, const bench_options& opts);

private:
  void flush() {
    if (flush_.empty()) return;
    std::memset(flush_.data(), static_cast<int>(++flush_round_), flush_.size());
  }

  options options_{};
  std::vector<unsigned char> flush_;
  unsigned char flush_round_ = 0;
};

static_assert(ReportsMeasurement<host_benchmarker>);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/bench/host_benchmarker.ipp>
#endif
