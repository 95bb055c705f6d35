#pragma once
/// \file Fair finals: the finalists of a tuning measured in interleaved rounds on one device
/// (A B C, A B C, ...), so that clock or thermal drift during the finals spreads over all of them
/// instead of favouring whoever ran first. Each round gives each finalist a share of the full
/// budget; its samples from every round are merged and summarised. The rounds done so far
/// (`finals_progress`) are journaled after each one, so that a tuning killed during its finals
/// measures only the rounds its journal does not hold. A tie within the measured noise
/// is then broken by steadiness, then by config order (`select_best`).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <exception>
#include <any>
#include <functional>
#include <tuple>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/stopping_rule.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// Rounds of the finals. 5: each finalist then sees every phase of a drift slower than the
/// finals (seconds: clocks, temperature) in 5 places, while a round's share (a fifth of the full
/// budget, 20 ms by default) still holds ~1000 runs of a 20 us kernel.
inline constexpr std::size_t final_rounds = 5;

/// Why a finalist failed in the finals (it is out of the later rounds): its status and message, as
/// `detail::record_failure` records them.
struct final_failure {
  candidate_status status = candidate_status::error;
  std::string reason;
};

/// One finalist's outcome: its timings (median, p20, p80 of all its samples) and their noise (the
/// relative standard deviation of all its samples, drift between the rounds included), or why it failed.
struct final_outcome {
  std::optional<timings> time;
  double rsd = 0.0;
  std::size_t samples = 0;
  std::optional<final_failure> failure;
};

/// The finals so far: how many timed rounds are done and, per finalist (in the finalists' order), its
/// samples from those rounds, or why it failed. What the tuning journals after each round, and what a
/// resumed tuning (or the next round's job in an isolated copy) goes on from.
struct finals_progress {
  std::size_t rounds_done = 0;
  std::vector<std::vector<double>> samples;
  std::vector<std::optional<final_failure>> failures;

  explicit finals_progress(std::size_t finalists = 0) : samples(finalists), failures(finalists) {}
};

/// Which rounds one call of `measure_rounds` times, and how.
struct rounds_plan {
  std::size_t rounds = final_rounds; ///< the finals' timed rounds in all (each a `rounds`-th of the budget)
  std::size_t last = final_rounds;   ///< time the rounds from progress.rounds_done up to (not including) this one
  /// The first of them warms up with the full `warmup_ms` (the device did not just run these finalists:
  /// a new process, a resumed tuning); later ones with a `rounds`-th of it.
  bool cold = true;
  /// > 0: untimed rounds first, until the device has settled or this many ms are spent (below).
  double settle_ms = 0;
  /// Called after each timed round, with what is done so far (the tuning's journal).
  std::function<void(const finals_progress&)> after_round{};
};

/// Settling stops once every finalist's median moved by at most this much between two untimed rounds.
/// 1%: under the 2% within which issue 35 asks cold runs to agree.
inline constexpr double settled_within = 0.01;

namespace detail {
/// Records a candidate's failure in `r`: the exception's type gives the status, its message the reason.
COTUNE_DECL void record_failure(candidate_result& r, std::exception_ptr e);

/// What `e` records as a candidate's failure (status and message).
[[nodiscard]] COTUNE_DECL final_failure failure_of(std::exception_ptr e);
} // namespace detail

/// Times rounds `progress.rounds_done` .. `plan.last - 1` of the finals of `runs` (each runs one
/// finalist once) on `bench`, interleaved: each run gets `full.rep_ms / plan.rounds` per round, its
/// samples appended to `progress.samples`. A run that throws gets its `progress.failures` entry and
/// is out of the later rounds (as is one that failed before). `full`'s other settings are kept.
///
/// `plan.settle_ms` > 0: first, untimed rounds of the same shape until the device has settled (every
/// finalist's median within `settled_within` of its previous round's) or `settle_ms` is spent. A GPU
/// whose clocks are still ramping up from idle, or coming down to what its power limit holds under a
/// sustained load, then does so before the timed rounds and not during them (issue 35: the winners of
/// cold S2 runs were reported 15% apart).
template <class Bench>
void measure_rounds(Bench& bench, const std::vector<std::function<void()>>& runs, const bench_options& full,
                    finals_progress& progress, const rounds_plan& plan) {
  const std::size_t rounds = plan.rounds ? plan.rounds : 1;
  const std::size_t last = std::min(plan.last, rounds);
  progress.samples.resize(runs.size());
  progress.failures.resize(runs.size());
  auto fail = [&](std::size_t k) { progress.failures[k] = detail::failure_of(std::current_exception()); };
  if (plan.settle_ms > 0 && !runs.empty() && progress.rounds_done < last) {
    bench_options o = full;
    o.rep_ms = full.rep_ms / static_cast<double>(rounds);
    o.warmup_ms = full.warmup_ms / static_cast<double>(rounds);
    o.quantiles = {0.5};
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> previous(runs.size(), 0.0);
    for (bool settled = false, first = true; !settled; first = false) {
      settled = !first;
      for (std::size_t k = 0; k < runs.size(); ++k) {
        if (progress.failures[k]) continue;
        try {
          const double median = bench.bench(runs[k], o).at(0);
          settled = settled && std::abs(median - previous[k]) <= settled_within * previous[k];
          previous[k] = median;
        } catch (...) {
          fail(k);
        }
      }
      if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() >= plan.settle_ms)
        break;
    }
  }
  const std::size_t first = progress.rounds_done;
  while (progress.rounds_done < last) {
    bench_options o = full;
    o.rep_ms = full.rep_ms / static_cast<double>(rounds);
    if (!(plan.cold && progress.rounds_done == first)) o.warmup_ms = full.warmup_ms / static_cast<double>(rounds);
    o.quantiles.clear();
    o.mode = return_mode::all;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (progress.failures[k]) continue;
      try {
        auto s = bench.bench(runs[k], o);
        progress.samples[k].insert(progress.samples[k].end(), s.begin(), s.end());
      } catch (...) {
        fail(k);
      }
    }
    ++progress.rounds_done;
    if (plan.after_round) plan.after_round(progress);
  }
}

/// Each finalist's outcome from its samples of every round (or its failure).
[[nodiscard]] COTUNE_DECL std::vector<final_outcome> summarize_finals(const finals_progress& progress);

/// Times each of `runs` in `rounds` interleaved rounds on `bench` (measure_rounds, from the first round,
/// settling first for up to `settle_ms`) and summarizes each one's samples.
template <class Bench>
[[nodiscard]] std::vector<final_outcome>
measure_interleaved(Bench& bench, const std::vector<std::function<void()>>& runs, const bench_options& full,
                    std::size_t rounds = final_rounds, double settle_ms = 0) {
  finals_progress progress(runs.size());
  measure_rounds(bench, runs, full, progress, rounds_plan{.rounds = rounds, .last = rounds, .settle_ms = settle_ms});
  return summarize_finals(progress);
}

/// Writes the finals' outcomes of `finalists` (in `progress`, every round done) into `results`: each
/// one's timings, noise and sample count, measured interleaved on `device`, or its failure.
template <class Results>
void record_finals(Results& results, const std::vector<std::size_t>& finalists, const finals_progress& progress,
                   std::size_t device) {
  const auto outcomes = summarize_finals(progress);
  for (std::size_t k = 0; k < finalists.size() && k < outcomes.size(); ++k) {
    auto& r = results[finalists[k]];
    r.device = static_cast<int>(device);
    r.resumed = false;
    if (outcomes[k].failure) {
      r.status = outcomes[k].failure->status;
      r.reason = outcomes[k].failure->reason;
      r.time = {inf_ms, inf_ms, inf_ms};
      continue;
    }
    r.status = candidate_status::ok;
    r.time = *outcomes[k].time;
    r.rsd = outcomes[k].rsd; // the noise the tie-break judges (select_best): the finals', not the first pass's
    r.samples = outcomes[k].samples;
    r.interleaved = true;
  }
}

/// On the launch device's thread: rounds of the finals of a tuning's `finalists` (loaded there if the
/// first pass measured them elsewhere), by `measure_rounds` with the tuning's hooks around every run,
/// going on from `progress` (aligned with `finalists`) as `plan` says. A finalist that fails to load
/// fails in `progress`. The caller records the outcomes once every round is done (`record_finals`):
/// an isolated copy that times one round sends that round's samples back instead. `ctx` is the tuner's core, `opts` and
/// `arguments` its options and argument roles; `state` is the tuning job's (results, binaries, loaded functions).
template <class Core, class Options, class Arguments, class State, class... Args>
void measure_finals(Core& ctx, const Options& opts, const Arguments& arguments, State& state,
                    const std::vector<std::size_t>& finalists, std::tuple<Args...>& args, std::size_t launch_dev,
                    const bench_options& full, finals_progress& progress, const rounds_plan& plan) {
  progress.samples.resize(finalists.size());
  progress.failures.resize(finalists.size());
  std::vector<std::function<void()>> runs;
  std::vector<std::vector<std::any>> saved(finalists.size(), std::vector<std::any>(sizeof...(Args)));
  bench_options o = full;
  for (std::size_t k = 0; k < finalists.size(); ++k) {
    const std::size_t i = finalists[k];
    auto& r = state.results[i];
    // Every finalist measured the same way, in every round: none replayed from a graph if any one's
    // runs do host work, also one that failed in an earlier (perhaps journaled) round.
    if (arguments.runs_host_work(r.cfg)) o.capturable = false;
    if (progress.failures[k]) { // failed in an earlier round: a run that measure_rounds never calls
      runs.push_back([] {});
      continue;
    }
    try {
      if (!state.loaded[i])
        state.loaded[i].emplace(ctx.load_module(*state.binaries[i], r.cfg, launch_dev));
      const auto* fn = &*state.loaded[i];
      const launch_grid g =
          opts.grid ? std::apply([&](Args&... xs) { return opts.grid(r.cfg, xs...); }, args) : launch_grid{};
      std::vector<std::any>* keep = &saved[k];
      runs.push_back([&ctx, &arguments, &args, &r, fn, g, keep] {
        std::apply([&](Args&... xs) { arguments.run_once(ctx.backend, *fn, r.cfg, g, *keep, xs...); }, args);
      });
    } catch (...) {
      progress.failures[k] = detail::failure_of(std::current_exception());
      runs.push_back([] {});
    }
  }
  ctx.measure_rounds(launch_dev, runs, o, progress, plan);
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/interleaved_finals.ipp>
#endif
