#pragma once
/// \file `cotune::detail::local_filler`: writes entries fetched from a remote store into the local cache
/// on a background thread, after the caller already has their content (issue 16: a remote hit must
/// not pay for the local write). A fill that fails is counted, never thrown: the entry is only
/// fetched remotely again next time.
///
/// At process exit the pending fills are finished (they are local writes, about a millisecond each),
/// for at most `exit_drain_limit`; whatever is left then is dropped, never half-written (every put
/// is an atomic rename). A child made by fork() inherits no thread: it starts its own.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <unistd.h>

#include <cotune/knobs/knobs.hpp>

namespace cotune {

/// What the background fills of the local cache have done in this process.
struct local_fill_stats {
  std::uint64_t queued = 0;  ///< fills asked for
  std::uint64_t done = 0;    ///< fills written
  std::uint64_t failed = 0;  ///< fills that threw (a full disk, a removed cache directory): counted only
  std::uint64_t dropped = 0; ///< fills still pending at exit past the drain limit
};

namespace detail {

class local_filler {
public:
  /// How long process exit waits for pending fills: a few hundred local writes; a disk this slow
  /// would have cost the caller as much had the writes stayed on its path.
  static constexpr std::chrono::milliseconds exit_drain_limit{2000};

  /// The process's filler (its thread starts at the first fill).
  [[nodiscard]] static local_filler& instance() {
    // Knobs are read by the fills (file_cache::put): made first, they are destroyed after the filler.
    (void)knobs();
    static local_filler filler;
    return filler;
  }

  local_filler() = default;
  local_filler(const local_filler&) = delete;
  local_filler& operator=(const local_filler&) = delete;
  ~local_filler();

  /// Runs `fill` on the background thread; an exception it throws is counted as a failed fill.
  void post(std::function<void()> fill);

  /// Waits until no fill is pending or running, at most `limit`; true if none is.
  bool wait_idle(std::chrono::milliseconds limit);

  [[nodiscard]] local_fill_stats stats();

private:
  struct state {
    std::mutex mutex;
    std::condition_variable wake, idle;
    std::deque<std::function<void()>> tasks;
    bool busy = false, closing = false;
    std::chrono::steady_clock::time_point deadline{};
    local_fill_stats stats;
    pid_t pid = ::getpid();
    std::thread thread;
  };

  state* current() {
    std::lock_guard lock(mutex_);
    return s_ && s_->pid == ::getpid() ? s_.get() : nullptr;
  }

  static void run(state& s);

  std::mutex mutex_; // s_ itself
  std::unique_ptr<state> s_;
};

} // namespace detail

/// Waits until the background fills of the local cache are written (or `limit` passed); true if none
/// is pending. A program that must find its remote hits on the local disk before it goes on (a
/// test, a container image being baked) calls this; exit waits for them anyway.
inline bool wait_for_local_fills(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  return detail::local_filler::instance().wait_idle(limit);
}

/// What the background fills of the local cache have done in this process.
[[nodiscard]] inline local_fill_stats local_fills() { return detail::local_filler::instance().stats(); }

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/local_fill.ipp>
#endif
