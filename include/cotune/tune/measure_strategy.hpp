#pragma once
/// \file `cotune::measure_strategy`: how the candidates of one tuning are measured. The tuning runs a
/// first pass over every compiled candidate with the budget the strategy gives it, then asks which
/// candidates deserve a final, full-budget measurement. Screening is the default; exhaustive
/// measurement (Triton's way) is the other shipped strategy. Users may bring their own.
///
///     tuner_options.measure = std::make_shared<cotune::exhaustive_measure>();

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <memory>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The seam: a non-virtual interface over protected virtuals (so that checks stay in one place).
class measure_strategy {
public:
  virtual ~measure_strategy() = default;

  /// The budget of the first pass over `candidates` candidates, given the full budget.
  [[nodiscard]] bench_options first_pass(const bench_options& full, std::size_t candidates) const {
    return do_first_pass(full, candidates);
  }

  /// After the first pass: the candidates (indices in config order) to measure again with the full
  /// budget `full`. Empty: the first pass decides. Only candidates whose status is ok are returned.
  [[nodiscard]] COTUNE_DECL std::vector<std::size_t> finalists(const std::vector<candidate_result>& first_pass,
                                                               const bench_options& full) const;

protected:
  [[nodiscard]] virtual bench_options do_first_pass(const bench_options& full, std::size_t candidates) const = 0;
  [[nodiscard]] virtual std::vector<std::size_t> do_finalists(const std::vector<candidate_result>& first_pass,
                                                              const bench_options& full) const = 0;
};

/// Every candidate measured once with the full budget (Triton's do_bench over each config).
class exhaustive_measure final : public measure_strategy {
protected:
  bench_options do_first_pass(const bench_options& full, std::size_t) const override { return full; }
  std::vector<std::size_t> do_finalists(const std::vector<candidate_result>&, const bench_options&) const override {
    return {};
  }
};

/// Screening: a short pass over every candidate (`rep_ms`, and at least `samples` timed runs of each),
/// then the full budget for those whose median is within `margin` of the best, at most `keep` of them
/// (the best by screening). With 16 candidates and 125 ms each, measuring all fully is most of a
/// tuning's time, spent mostly on candidates that lose clearly. Even a lone finalist is measured again,
/// so that the winner's stored timing is always a full-budget one. Off (one full pass) when there are
/// 2 candidates or fewer, or when the full budget is already under twice the screening budget.
class screening_measure final : public measure_strategy {
public:
  /// 3 timed runs at least: a kernel slower than the screening budget was judged by one run, and 23-29
  /// of 1,105 screened H200 candidates were then more than 5% off their full measurement (issue 35);
  /// the median of 3 is off only when 2 of the 3 runs are (benchmarks/bench_screening.cpp measures it).
  static constexpr std::size_t default_samples = 3;

  screening_measure(double rep_ms, double margin, std::size_t keep, std::size_t samples = default_samples)
      : rep_ms_(rep_ms), margin_(margin), keep_(keep), samples_(samples) {}

  /// From the knobs bench.screen_rep_ms, bench.screen_margin and bench.screen_keep.
  [[nodiscard]] COTUNE_DECL static screening_measure from_knobs();

  /// Whether screening applies to `candidates` candidates under the budget `full`.
  [[nodiscard]] bool applies(const bench_options& full, std::size_t candidates) const noexcept {
    return candidates > 2 && rep_ms_ > 0 && 2 * rep_ms_ <= full.rep_ms;
  }

protected:
  COTUNE_DECL bench_options do_first_pass(const bench_options& full, std::size_t candidates) const override;
  COTUNE_DECL std::vector<std::size_t> do_finalists(const std::vector<candidate_result>& rs,
                                                    const bench_options& full) const override;

private:
  double rep_ms_, margin_;
  std::size_t keep_, samples_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/measure_strategy.ipp>
#endif
