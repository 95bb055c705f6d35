#pragma once
/// \file `cotune::detail::fork_server`: runs each job in a fresh process, forked from a small
/// single-threaded server process.
///
/// Why: a library may serialise its work inside one process, be impossible to interrupt, or crash.
/// NVRTC does the first two: 16 concurrent compiles of example 04's GEMM took 1.17-1.54 s on 16
/// threads of one process but 0.34-0.41 s in 16 processes (32-core H200 host, 2026-11-30; one compile
/// alone: 0.25 s). A job run here has its own process: it runs in parallel with the others, is
/// killed at its deadline or on a stop request, and a crash is reported instead of ending the caller.
///
/// The server is forked once, from the caller's process, when the fork_server is created. It starts
/// its own session (a Ctrl-C meant for the caller's terminal group does not kill compiles the caller
/// may want to finish), keeps its socket and closes every other inherited descriptor (a copied pipe
/// end would keep some other reader of the caller from seeing its end of file), points stdin and
/// stdout at /dev/null, restores default signal handling, and then serves requests one at a time:
/// for each it forks a monitor, which forks the worker, reports the worker's exit status, and kills
/// the worker if the caller stops listening (gave up at a deadline, was cancelled, or died). A worker
/// is a copy of the single-threaded server, so no lock that some other thread of the caller held at
/// fork time can block it (glibc resets its own malloc, stdio and loader locks in a forked child, all
/// but the loader's list lock: a server that inherited that one held is found at its start, killed
/// and forked again; see start()).
/// The job function and its context are fixed at creation and run in the worker's copy of the
/// caller's memory as it was then: they must not take locks that the caller's other threads may have
/// held at that moment. An optional `fork_lock` is held exclusively around each fork of the caller.
///
/// Protocol. Caller to server, on a stream socket: [u64 size][request], the first bytes sent with
/// the write end of a fresh pipe attached (SCM_RIGHTS). On that pipe, each record a tag and a u64:
/// the worker writes 'P' (its pid) at once, then 'R' (reply size, then the reply) or 'X' (message
/// size, then the exception's message); the monitor then writes 'S' (the worker's wait status), or
/// 'F' (errno) when it could not fork the worker. The caller closing its end tells the monitor to
/// kill the worker.
///
/// Warm workers (`warm_workers::count` > 0). Forking a worker per job costs the fork, the copy-on-write
/// faults of its first touches, and whatever the job's library does on first use in a fresh process
/// (NVRTC: ~45 ms of a 79 ms first compile of a tiny kernel against 31-39 ms for the next ones, build
/// machine, 2026-11-30). So the server can run a warm-up once (`warm_workers::warm_up`) and keep up to
/// `count` persistent workers, each forked from it and serving many jobs: a job goes to an idle warm
/// worker, else to a new one while fewer than `count` live, else to a worker forked for that job alone.
/// A persistent worker is spawned by a request whose size is `spawn_marker`, with one end of a
/// socket pair attached: the worker writes 'P' on it, then reads [u64 size][request] and answers each
/// with 'R' or 'X'; its monitor writes 'S' when it ends and kills it when the caller shuts its end down.
/// A job past its deadline or stopped closes the channel (the worker is killed and not reused); a
/// worker that crashes takes only its job with it; the next job gets another worker.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <vector>
#include <mutex>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <system_error>
#include <string_view>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/detail/fork_process.hpp>
#include <cotune/detail/process.hpp> // wait_status_text
#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail {

/// How one job ended.
enum class job_outcome {
  ok,        ///< the job returned; `reply` holds what it returned
  failed,    ///< the job threw; `detail` holds the exception's message
  crashed,   ///< the worker died without a reply; `detail` says how ("killed by signal 11 (...) before replying")
  timed_out, ///< killed at its deadline
  cancelled, ///< killed on a stop request
  lost,      ///< the server or monitor is gone, or the request could not be sent; `detail` says why
};

struct job_result {
  job_outcome outcome = job_outcome::lost;
  std::string reply;  ///< the job's return value, when ok
  std::string detail; ///< why, when not ok
  pid_t worker = -1;  ///< the worker's pid (gone by the time run() returns)
};

/// `fd` moved to a descriptor >= 3 (close-on-exec): a caller that closed stdin, stdout or stderr
/// would otherwise get pipe and socket ends there, where the server keeps whatever it inherits.
[[nodiscard]] COTUNE_DECL int above_standard_streams(int fd);

/// Persistent workers a fork_server keeps (see the file comment).
struct warm_workers {
  /// At most this many persistent workers; 0 = none (every job forks a worker of its own).
  std::size_t count = 0;
  /// Runs once in the server, before it forks any worker (so that every worker starts warm).
  void (*warm_up)(const void* context) = nullptr;
  /// A worker is retired after this many jobs and replaced by a fresh one: bounds what a leak in the
  /// job's library can accumulate, at the price of one fork from the warm server per 256 jobs.
  std::size_t jobs_per_worker = 256;
  /// Workers forked as soon as the server starts (at most `count`), so that the first jobs find them.
  std::size_t prestart = 0;
};

class fork_server {
public:
  /// Runs in the worker: the request in, the reply out. An exception becomes job_outcome::failed.
  using job_function = fork_process::job_function;

  /// Forks the server now, holding `fork_lock` (if any) exclusively while forking. Throws
  /// std::system_error if the socket or the fork fails.
  fork_server(job_function job, const void* context, std::shared_mutex* fork_lock = nullptr, warm_workers warm = {});

  fork_server(const fork_server&) = delete;
  fork_server& operator=(const fork_server&) = delete;

  /// Ends the server (its socket is shut down) and reaps it. Monitors kill their workers once the
  /// callers waiting on them stop listening.
  ~fork_server();

  /// Persistent workers alive now (idle or busy), and jobs they have served (for tests and figures).
  [[nodiscard]] std::size_t warm_worker_count() const {
    std::lock_guard pool(pool_mutex_);
    return live_;
  }
  [[nodiscard]] std::uint64_t warm_jobs() const noexcept { return warm_jobs_.load(std::memory_order_relaxed); }

  /// The server's pid (for tests).
  [[nodiscard]] pid_t server_pid() const {
    std::lock_guard lock(mutex_);
    return server_;
  }

  /// Runs the job on `request` in a new worker and waits for it. Past `deadline` (steady clock;
  /// time_point::max() for none) or once `stop` is requested, the caller stops waiting at once and the
  /// worker's monitor kills the worker. If the server died since the last job, a new one is forked
  /// first. Thread-safe: jobs run concurrently.
  [[nodiscard]] job_result run(std::string_view request,
                               std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                               std::stop_token stop = {}) {
    if (warm_.count > 0)
      if (auto warm = run_warm(request, deadline, stop)) return *std::move(warm);
    return run_forked(request, deadline, std::move(stop));
  }

private:
  friend class fork_server_lane;

  /// One job in a worker forked for it alone.
  [[nodiscard]] job_result run_forked(std::string_view request, std::chrono::steady_clock::time_point deadline,
                                      std::stop_token stop);

  /// The caller's side of one persistent worker: its channel, and the records read on it.
  struct warm_worker {
    unique_fd channel;
    std::size_t jobs = 0;
    fork_process::job_records records;
    ~warm_worker() {
      // shutdown, not just close: a child the caller forked without exec may hold a copy, and the
      // monitor must see the hang-up all the same.
      if (channel.get() >= 0) ::shutdown(channel.get(), SHUT_RDWR);
    }
  };

  /// Asks the server for a new persistent worker; null if the server cannot be reached.
  [[nodiscard]] std::unique_ptr<warm_worker> spawn(std::string& why);

  /// Forks the `prestart` workers. Call with neither mutex held.
  void prestart_workers();

  /// Whether an idle worker is still there: reads what it sent while idle (its pid, or its end).
  static bool still_alive(warm_worker& w);

  /// Takes an idle live worker, or spawns one while fewer than `count` live; null when all are busy
  /// (or none can be spawned).
  [[nodiscard]] std::unique_ptr<warm_worker> take_worker();

  /// Gives a worker back (kept for the next job) or drops it (stopped, dead, or retired).
  void release_worker(std::unique_ptr<warm_worker> w, bool keep);

  /// One job on a persistent worker; nullopt when none is free (the caller forks one for the job).
  [[nodiscard]] std::optional<job_result> run_warm(std::string_view request,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const std::stop_token& stop);

  /// How long to wait for the next record: 20 ms (how quickly a deadline or a stop request is noticed
  /// while a job runs), less when the deadline is nearer.
  [[nodiscard]] static int wait_ms(std::chrono::steady_clock::time_point deadline) {
    if (deadline == std::chrono::steady_clock::time_point::max()) return 20;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 20));
  }

  /// Forks the server. Call with `mutex_` held.
  void start();

  /// Whether the server process still runs. Call with `mutex_` held.
  [[nodiscard]] bool server_alive() const;

  /// Ends and reaps the server. Call with `mutex_` held.
  void stop_server();

  /// Sends one request with `fd` attached; restarts a dead server once. `generation` says which
  /// server took it.
  bool send(std::uint64_t header, std::string_view request, int fd, std::string& why, std::uint64_t& generation);

  bool send_locked(std::uint64_t header, std::string_view request, int fd, std::string& why) const;

  /// Reads the records of one job from `in` until the job has replied and its exit status is in, or
  /// the pipe ends, or the caller gives up (deadline, stop request).
  static void receive(int in, std::chrono::steady_clock::time_point deadline, const std::stop_token& stop,
                      job_result& result);

  job_function job_;
  const void* context_;
  std::shared_mutex* fork_lock_;
  warm_workers warm_;
  mutable std::mutex pool_mutex_; ///< guards idle_ and live_
  std::vector<std::unique_ptr<warm_worker>> idle_;
  std::size_t live_ = 0;
  std::atomic<std::uint64_t> warm_jobs_{0};
  mutable std::mutex mutex_; ///< guards the socket: one request at a time, and restarts
  int socket_ = -1;
  pid_t server_ = -1;
  std::uint64_t generation_ = 0; ///< counts servers started
};

/// One caller's own persistent worker of a fork_server with warm workers, to which it may send a job
/// before the previous one has answered: the worker starts it as soon as it is done with the last,
/// without waiting for the caller to wake up, read the answer and send the next one (two wake-ups of
/// sleeping processes per job: ~0.1 ms of a 2.5 ms job on the 2-core build machine, more on hosts whose
/// idle cores sleep deeper, 2026-12-04). Outcomes come back in the order the jobs were sent, as `run`
/// reports them; a job the worker had not taken when it died (the one before it crashed or hung) is
/// sent again, to a new worker, and one it had taken ('A') never is: it is `crashed` (a failed write
/// to a worker says only that it is gone, not which jobs it had taken). Not thread-safe: one caller at a
/// time.
class fork_server_lane {
public:
  explicit fork_server_lane(fork_server& server) : server_(&server) {}
  fork_server_lane(const fork_server_lane&) = delete;
  fork_server_lane& operator=(const fork_server_lane&) = delete;
  ~fork_server_lane() { drop(); }

  /// Jobs sent and not yet received.
  [[nodiscard]] std::size_t in_flight() const noexcept { return sent_.size(); }

  /// Sends `request` behind the jobs in flight, without waiting.
  void send(std::string_view request);

  /// The outcome of the oldest job in flight, waiting for it until `deadline` or a stop request (then
  /// the worker is killed, and the jobs behind it go to a new one); `lost` when none is in flight or no
  /// worker can be had.
  [[nodiscard]] job_result receive(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop = {});

private:
  /// A worker for this lane, with every job in flight sent to it; false (and `why`) if none.
  bool take(std::string& why);

  static bool write(fork_server::warm_worker& w, const std::string& request);

  /// The oldest job has its (fatal) outcome: its worker is dropped, and the jobs behind it are sent to a
  /// new one now, so that it starts them while the caller handles this outcome.
  void finish_front();

  void drop_worker();

  /// Gives the worker back for other jobs when nothing of this lane is queued on it; else drops it.
  void drop();

  fork_server* server_;
  std::unique_ptr<fork_server::warm_worker> worker_;
  std::deque<std::string> sent_; ///< requests in flight, oldest first
  /// How many of `sent_` (the oldest) were written whole to `worker_`. A write that fails (the worker
  /// died, maybe of a job it had already taken) leaves the rest unwritten: what the worker did with
  /// those it has is read from its records, and the others go to the next worker.
  std::size_t written_ = 0;
};

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/fork_server.ipp>
#endif
