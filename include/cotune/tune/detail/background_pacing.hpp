#pragma once
/// \file How a background tuning (first_call_mode::serve) measures beside the program's own work on
/// the same device: `device_share` keeps its device time within a share of the wall time
/// (tune_options::background_share, COTUNE_BACKGROUND_SHARE), `run_paced` runs a measurement when the
/// share allows it, and `noisy_measurements` names the candidates whose samples were disturbed, so
/// that they are measured again.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cotune/tune/tuning_result.hpp>

namespace cotune::detail {

/// One device's background measurement, kept within a share of the wall time. Every background
/// tuning on a device (of every tuner in the process) draws on its one `device_share`: after a busy
/// period `b` measured with share `s`, the next background measurement on the device starts once the
/// device has been free of background work for `b (1 - s) / s`, so background work holds the device
/// for at most `s` of any stretch of time longer than one measurement. Blocking tunings neither wait
/// nor count. Thread-safe.
class device_share {
public:
  using clock = std::chrono::steady_clock;

  /// How long a background measurement that would start at `now` must wait (zero: it may start).
  [[nodiscard]] COTUNE_DECL clock::duration pause(clock::time_point now) const;

  /// Records a background busy period from `start` to `end`, measured with share `share` (in (0, 1]).
  COTUNE_DECL void busy(clock::time_point start, clock::time_point end, double share);

  /// The share of device `id` (the engine's key of the device's thread): one per device per process.
  [[nodiscard]] COTUNE_DECL static device_share& of(const std::string& id);

private:
  mutable std::mutex mutex_;
  clock::time_point free_at_{}; ///< when the next background measurement may start
};

/// What a background tuning's pacing did: how often it waited, and for how long in all.
struct pacing_counts {
  std::atomic<std::size_t> pauses{0};
  std::atomic<std::int64_t> paused_us{0};

  void paused(device_share::clock::duration d) {
    pauses.fetch_add(1, std::memory_order_relaxed);
    paused_us.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(d).count(), std::memory_order_relaxed);
  }
};

/// On device executor `device`'s thread: runs `work` now if `share` allows it, recording its time as
/// busy; else arms a timer on `timers` for the pause and tries again on `device` when it expires. The
/// device's thread is never held while it waits: stand-ins' loads, blocking tunings and other
/// tunings' work run there meanwhile. `counts` (shared with the timer) counts the pauses.
COTUNE_DECL void run_paced(device_share& share, double fraction, boost::asio::any_io_executor device,
                           boost::asio::any_io_executor timers, std::shared_ptr<pacing_counts> counts,
                           std::function<void()> work);

/// Completes after `wait`, on a timer of `timers` (a coroutine's pause that holds no thread).
[[nodiscard]] COTUNE_DECL boost::asio::awaitable<void> pause_for(boost::asio::any_io_executor timers,
                                                                 device_share::clock::duration wait);

/// How noisy a measurement was, as the disturbance detector judges it: the p20-p80 spread of its
/// samples over their median (+inf for a failed one). Not the samples' relative standard deviation:
/// one preemption of a few ms (on a shared CI machine) made a steady 0.1 ms kernel's rsd 4.5 while
/// its p20-p80 spread stayed under 1%; disturbance by the program's kernels, which slows many
/// samples, widens the spread.
[[nodiscard]] COTUNE_DECL double measured_spread(const candidate_result& r);

/// The median measured_spread of the measured candidates (status ok, with samples; 0 when none).
[[nodiscard]] COTUNE_DECL double median_spread(const std::vector<candidate_result>& results);

/// The candidates of a first pass whose measurement was disturbed: measured (status ok, with
/// samples), and whose spread is above `noisy_spread_floor` and above `noisy_spread_factor` times
/// the median spread of every measured candidate (a kernel as noisy as the others is not disturbed,
/// it is that kind of kernel).
[[nodiscard]] COTUNE_DECL std::vector<std::size_t> noisy_measurements(const std::vector<candidate_result>& results);

/// Whether the finals of `finalists` were disturbed: one of them above the floor and above the factor
/// times `reference` (the first pass's median spread).
[[nodiscard]] COTUNE_DECL bool noisy_finals(const std::vector<candidate_result>& results,
                                            const std::vector<std::size_t>& finalists, double reference);

/// 2%: a GPU kernel measured alone spreads well under 1% (noise_target is 0.5%), a host kernel under
/// ~1% here; samples above both that and 3x the tuning's median spread were taken beside other work.
inline constexpr double noisy_spread_floor = 0.02;
inline constexpr double noisy_spread_factor = 3.0;
/// A noisy candidate is measured again at most this many times (each when the share allows), the
/// finals at most once more: a kernel that stays noisy alone costs a bounded amount, and keeps its
/// steadiest measurement.
inline constexpr std::size_t background_retries = 2;
inline constexpr std::size_t background_final_repeats = 1;

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/background_pacing.ipp>
#endif
