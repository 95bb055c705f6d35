#pragma once
/// \file What one tuning found: every candidate's status and timings, the winner, provenance.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <ctime>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/tune/tuning_phases.hpp>

namespace cotune {

/// The method of a tuning's only candidate: with nothing to choose it runs once and is not timed (as
/// in Triton), so its times are 0 and say nothing.
inline constexpr std::string_view single_config_method = "single config (not measured)";

/// Why a candidate has no timing.
enum class candidate_status {
  ok,
  compile_error,
  out_of_resources,
  launch_error,
  timeout,
  error,
  not_run,
  compiler_crashed, ///< the compiler died (a signal, an internal compiler error): not the kernel's fault
  crashed,          ///< the candidate killed its isolated benchmark process (a signal, an abort)
  hung,             ///< the candidate ran past the bench timeout in its isolated process and was killed
  not_evaluated,    ///< the search strategy did not propose it within its budget (search/search_strategy.hpp)
  wrong_result      ///< tune_options::verify rejected its output (tune/verification.hpp); it never wins
};

[[nodiscard]] constexpr std::string_view to_string(candidate_status s) noexcept {
  switch (s) {
  case candidate_status::ok: return "ok";
  case candidate_status::compile_error: return "compile error";
  case candidate_status::out_of_resources: return "out of resources";
  case candidate_status::launch_error: return "launch error";
  case candidate_status::timeout: return "timeout";
  case candidate_status::error: return "error";
  case candidate_status::not_run: return "not run";
  case candidate_status::compiler_crashed: return "compiler crashed";
  case candidate_status::crashed: return "crashed";
  case candidate_status::hung: return "hung";
  case candidate_status::not_evaluated: return "not evaluated";
  case candidate_status::wrong_result: return "wrong result";
  }
  return "?";
}

[[nodiscard]] constexpr std::optional<candidate_status> candidate_status_from(std::string_view s) noexcept {
  for (auto st : {candidate_status::ok, candidate_status::compile_error, candidate_status::out_of_resources,
                  candidate_status::launch_error, candidate_status::timeout, candidate_status::error,
                  candidate_status::not_run, candidate_status::compiler_crashed, candidate_status::crashed,
                  candidate_status::hung, candidate_status::not_evaluated, candidate_status::wrong_result})
    if (to_string(st) == s) return st;
  return std::nullopt;
}

inline constexpr double inf_ms = std::numeric_limits<double>::infinity();

/// Timings in ms: median, p20, p80. Compared lexicographically (spec §3.4).
using timings = std::array<double, 3>;

/// One candidate's outcome.
struct candidate_result {
  config cfg;
  candidate_status status = candidate_status::not_run;
  std::string reason{};                  ///< failure message (compiler log, limit, ...)
  timings time{inf_ms, inf_ms, inf_ms}; ///< +inf unless status is ok
  double compile_ms = 0;
  bool binary_from_cache = false;
  int device = -1; ///< index of the device it was measured on
  bool screened_only = false; ///< timed only by the short screening pass (it lost clearly there)
  bool resumed = false;       ///< taken from the journal of an earlier, interrupted tuning (not measured now)
  bool interleaved = false;   ///< a finalist measured in interleaved rounds with the others (fair finals)
  /// A finalist's median in the first (screening) pass, before the finals replaced `time`: the one timing
  /// comparable with the screened-only candidates'. +inf when the finals did not re-measure it.
  double screen_ms = inf_ms;
  /// How its first measurement was taken, where the benchmarker says (bench/measurement.hpp):
  /// "per-launch", "graph-batch xN", "back-to-back xN", "host"; empty when unknown.
  std::string method{};
  /// The relative standard deviation of that measurement's samples; a finalist's (`interleaved`): of all its
  /// samples in the finals, the noise the tie-break judges (`select_best`).
  double rsd = 0.0;
  std::size_t samples = 0; ///< how many samples it took (a finalist's: in the finals)
};

/// Where and when a result was made.
struct provenance {
  std::string host;
  std::string device;
  std::string date; ///< UTC, ISO 8601
  std::string cotune_version = version;

  [[nodiscard]] static provenance here(std::string device);
};

/// Index of the best candidate: lowest (median, p20, p80); ties go to the earlier config. Candidates
/// timed with the full budget are preferred to those timed only by screening (a short pass whose
/// medians are noisier and need not be comparable), so a screened-only timing can win only when no
/// candidate was measured in full. Nothing if every candidate failed.
///
/// Among finalists measured in interleaved rounds, a tie within the measured noise is broken so that
/// one machine picks the same winner run after run. Tied with the fastest are the interleaved
/// finalists whose band (median +- half the p20-p80 spread) overlaps the fastest's band. Of those,
/// the steadiest win: the ones whose noise (the relative standard deviation of all their samples in
/// the finals, `rsd`) is at most `steadier_by` times the smallest noise among them (noise under
/// `noise_floor` counts as `noise_floor`: noise that small differs by rounding and chance, not
/// steadiness); of those, the earliest config. Why the steadiness first: a noisy finalist's median
/// wanders from run to run by more than the gap it is tied by, so "the faster median" or "whether it
/// is tied" would change with the run; which finalist is the steadier does not, and the steadier of
/// two equally fast configs is the one whose time a user can rely on. Why the standard deviation and
/// not the p20-p80 spread: what makes a kernel noisy is mostly its tails (runs slowed by clocks,
/// other work, interrupts), which the spread between two quantiles does not see; on a 15 us kernel
/// two finalists of 1.7% and 0.2% noise had p20-p80 spreads within a factor of two.
[[nodiscard]] COTUNE_DECL std::optional<std::size_t> select_best(const std::vector<candidate_result>& cs);

/// How a background tuning (first_call_mode::serve) measured beside the program's own work: its share
/// of device time (tune_options::background_share, COTUNE_BACKGROUND_SHARE), the pauses it took to keep
/// to it, and what it measured again because the samples were noisy (disturbed). All zero for a
/// blocking tuning. This run's only: not stored with the result.
struct background_measurement {
  double share = 0;             ///< 0: not a background tuning
  std::size_t pauses = 0;       ///< measurements that waited for the share to allow them
  double paused_ms = 0;         ///< how long they waited, in all
  std::size_t remeasured = 0;   ///< measurements taken again because they were noisy (a candidate once per retry)
  std::size_t final_repeats = 0; ///< times the finals were run again because they were noisy
};

/// The outcome of tuning one key.
struct tuning_result {
  std::string kernel;
  std::string key_text;
  std::vector<candidate_result> candidates;
  std::size_t winner = 0;
  double wall_ms = 0;
  bool from_cache = false; ///< read from the tuning-result cache rather than measured now
  provenance made;
  bool launch_options = true; ///< the backend uses configs' launch options (false: the host backend)
  tuning_phases phases{}; ///< where a measured tuning's wall time went (none for one read from a cache)
  background_measurement background{}; ///< a background tuning's pacing and re-measurements
  /// Timed rounds of the finals taken from the journal of an interrupted run (of `final_rounds`, 5),
  /// not measured again. This run's only: not stored with the result.
  std::size_t final_rounds_resumed = 0;

  [[nodiscard]] const config& best() const { return candidates.at(winner).cfg; }
  /// A config as this result's backend sees it: without launch options where it has none.
  [[nodiscard]] std::string shown(const config& c) const { return launch_options ? c.text() : c.params_text(); }

  /// JSON for the tuning-result cache. Failed timings are written as null (standard JSON).
  [[nodiscard]] std::string json() const;

  /// Reads a result written by `json()` (also accepts Infinity/NaN timings from other writers).
  /// Nothing if the text is not a complete, consistent result; the winner is re-selected from the
  /// stored timings rather than trusted. `partial`: a tuning still in progress (a journal), which may
  /// have no winner yet.
  [[nodiscard]] static std::optional<tuning_result> from_json(std::string_view text, bool partial = false);
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/tuning_result.ipp>
#endif
