#pragma once
/// \file The parent's GPU isolation workers (gpu/isolation.hpp says why they exist): `isolation_worker`,
/// one worker process serving one device, started through the project's process helper
/// (detail/process.hpp's `child_process`: /proc/self/exe with the runtime's variable set), and
/// `isolation_pool`, the process's workers, one per device, replaced after each crash or hang, with
/// the warnings for the backend's take_warnings(). The same for CUDA and HIP.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/detail/unique_fd.hpp>
#include <cotune/gpu/isolation_protocol.hpp>

namespace cotune::gpu::detail {

/// How long a new worker may take to report ready: exec, the runtime's initialisation and a context
/// on its device. On the H200 test machine a respawn took well under a second (bench_cuda_isolation prints
/// p50/p99); 30 s leaves room for a loaded 8-GPU host and still says "cannot start" in bounded time.
inline constexpr std::chrono::seconds worker_start_limit{30};
/// The parent's backstop past the worker's own first-run deadline (COTUNE_BENCH_TIMEOUT_MS), for a
/// worker stuck inside the driver: hangs are detected at the bench timeout plus at most this.
inline constexpr std::chrono::milliseconds hang_slack{900};
/// How long a worker whose socket closed may take to end before it is killed and collected.
inline constexpr std::chrono::milliseconds reap_grace{2000};

/// One worker process serving one device.
class isolation_worker {
public:
  /// Starts a worker for device `ordinal` (does not wait for it: `ready` does). Throws cotune::error
  /// when the process cannot be spawned.
  COTUNE_DECL isolation_worker(const worker_kind& kind, int ordinal);
  isolation_worker(const isolation_worker&) = delete;
  isolation_worker& operator=(const isolation_worker&) = delete;
  ~isolation_worker() { kill(); }

  /// Waits for the worker's ready report (once); nothing when ready, else why it cannot serve.
  [[nodiscard]] COTUNE_DECL std::optional<std::string> ready();

  /// Milliseconds from spawning to ready.
  [[nodiscard]] double start_ms() const noexcept { return start_ms_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }

  /// Runs one job: sends it and waits for the reply, killing the worker at the deadline. An ending
  /// other than returned or threw means the worker is gone (`alive()` is false). Nothing when the job
  /// could not be sent: the worker had ended before it (an idle worker the OOM killer chose, say), so
  /// the job never ran; `unsent()` says how the worker ended.
  [[nodiscard]] COTUNE_DECL std::optional<cotune::detail::isolated_result> run(const worker_job& job);

  /// How the worker had ended when `run` could not send it a job ("pid 7: exited with status 0"; ""
  /// otherwise).
  [[nodiscard]] const std::string& unsent() const noexcept { return unsent_; }

  [[nodiscard]] bool alive() const noexcept { return process_ && process_->running(); }

  /// Kills the worker (if it still runs) and collects it.
  COTUNE_DECL void kill() noexcept;

private:
  [[nodiscard]] int pid() const noexcept { return process_ ? process_->pid() : -1; }
  /// Collects the worker's exit: "killed by signal 6 (Aborted)" or "exited with status 3". Called when
  /// its socket closed; one still running after `reap_grace` is killed (stuck in its exit, say).
  COTUNE_DECL std::string reap() noexcept;

  const worker_kind* kind_;
  int ordinal_;
  std::optional<cotune::detail::child_process> process_;
  cotune::detail::unique_fd socket_;
  std::chrono::steady_clock::time_point started_{};
  bool ready_ = false;
  std::optional<std::string> why_not_;
  std::string unsent_;
  double start_ms_ = 0;
};

/// Process-wide: one worker per device, replaced after each crash or hang, and the warnings for the
/// backend's take_warnings(). Thread-safe; jobs for one device run one at a time.
class isolation_pool {
public:
  /// The process's pool of `kind`'s workers.
  template <const worker_kind& Kind>
  static isolation_pool& of() {
    static auto* pool = new isolation_pool(Kind); // never destroyed: workers end with the process (EOF)
    return *pool;
  }

  /// Runs `job` on device `ordinal`'s worker. `refused` with the reason when no worker can run
  /// there (then the caller measures in-process; the first such reason is also a warning). A worker
  /// found ended when the job is sent to it is replaced and the job goes to the new one: the job never
  /// ran, so its candidate is not blamed (after a second such worker in a row it is recorded as crashed,
  /// with both reasons).
  [[nodiscard]] COTUNE_DECL cotune::detail::isolated_result run(int ordinal, const worker_job& job);

  /// Spawns device `ordinal`'s worker now if none is running, without waiting for it: its start-up
  /// (~135 ms on the H200: a new process and its context) then overlaps with the tuning's compiles
  /// instead of delaying its first measurement. A failure is left for `run` to report. Never throws.
  COTUNE_DECL void prestart(int ordinal) noexcept;

  /// Milliseconds each worker took from spawn to ready (the first and every replacement).
  [[nodiscard]] COTUNE_DECL std::vector<double> start_times() const;
  /// Workers replaced after a crash or a hang.
  [[nodiscard]] COTUNE_DECL std::size_t replaced() const;
  /// The warnings since the last call.
  [[nodiscard]] COTUNE_DECL std::vector<std::string> take_warnings();
  /// Queues a warning (once per distinct text).
  COTUNE_DECL void warn_once(std::string text);

private:
  explicit isolation_pool(const worker_kind& kind) : kind_(&kind) {}

  struct slot {
    std::mutex mutex;
    std::unique_ptr<isolation_worker> worker;
    std::string unavailable;
    bool counted = false;
  };

  COTUNE_DECL slot& slot_for(int ordinal);

  COTUNE_DECL cotune::detail::isolated_result refuse(slot& s, int ordinal, const std::string& why);

  const worker_kind* kind_;
  mutable std::mutex mutex_;
  std::map<int, std::unique_ptr<slot>> slots_;
  std::vector<double> start_ms_;
  std::size_t replaced_ = 0;
  std::vector<std::string> warnings_, warned_;
};

} // namespace cotune::gpu::detail

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/isolation_pool.ipp>
#endif
