#pragma once
/// \file `cotune::tuning_phases`: where a measured tuning's wall time went (compile, load, verify,
/// measure, idle), and how busy its compile threads and devices were. Made from the tuning's timeline
/// (tune/trace.hpp), stored with the result, printed in the summary line and shown by `cotune report`.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <string>

#include <fmt/core.h>

namespace cotune {

/// Milliseconds per phase of candidate work.
struct phase_times {
  double compile = 0, load = 0, verify = 0, measure = 0;

  [[nodiscard]] double total() const noexcept { return compile + load + verify + measure; }
};

/// A tuning's phases. `wall` splits its wall time: each instant goes to the phase that held a device
/// then (measure, else verify, else load), else to compiling when a compile ran, else to `idle_ms`
/// (nothing of the tuning's candidates ran: reading caches, the search deciding, waiting), so that
/// wall.total() + idle_ms is the tuning's wall time. `busy` sums each phase over the threads that ran
/// it (compile: CPU time of the compile pool's threads; the others: device time), so it can exceed
/// the wall time when compiles or devices run side by side.
struct tuning_phases {
  phase_times wall;
  double idle_ms = 0;
  phase_times busy;
  std::size_t compile_threads = 0, devices = 0;

  /// Whether the phases were recorded (results stored by older versions, or read from a cache, have none).
  [[nodiscard]] bool known() const noexcept { return wall.total() + idle_ms > 0; }

  /// The least wall time this tuning's work could take with its threads and devices: the compiles
  /// spread over every compile thread, or the measurements back to back on every device, whichever
  /// is longer (issue 35's bound; verification and loads are left out of it).
  [[nodiscard]] double lower_bound_ms() const noexcept {
    const double compile = compile_threads ? busy.compile / static_cast<double>(compile_threads) : busy.compile;
    const double measure = devices ? busy.measure / static_cast<double>(devices) : busy.measure;
    return std::max(compile, measure);
  }

  /// "compile 1.9 s, measure 1.1 s, verify 0.1 s, idle 0.1 s": the wall split, largest first, phases
  /// under 0.05 s left out (idle always shown).
  [[nodiscard]] std::string text() const;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/tuning_phases.ipp>
#endif
