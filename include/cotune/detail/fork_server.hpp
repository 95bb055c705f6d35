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
/// fork time can block it (glibc resets its own malloc, stdio and loader locks in a forked child).
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
[[nodiscard]] inline int above_standard_streams(int fd) {
  if (fd < 0 || fd >= 3) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

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
  fork_server(job_function job, const void* context, std::shared_mutex* fork_lock = nullptr, warm_workers warm = {})
      : job_(job), context_(context), fork_lock_(fork_lock), warm_(warm) {
    {
      std::lock_guard lock(mutex_);
      start();
    }
    prestart_workers();
  }

  fork_server(const fork_server&) = delete;
  fork_server& operator=(const fork_server&) = delete;

  /// Ends the server (its socket is shut down) and reaps it. Monitors kill their workers once the
  /// callers waiting on them stop listening.
  ~fork_server() {
    {
      std::lock_guard pool(pool_mutex_);
      idle_.clear(); // each closes its channel: the worker sees its end of file and exits
    }
    std::lock_guard lock(mutex_);
    stop_server();
  }

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
                                      std::stop_token stop) {
    job_result result;
    // A server that died just after taking a request (killed, out of memory) never started its job:
    // that is safe to retry, once, on a new server.
    for (int attempt = 0; attempt < 2; ++attempt) {
      result = job_result{};
      int pipe_fds[2];
      if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        result.detail = fmt::format("pipe: {}", std::strerror(errno));
        return result;
      }
      unique_fd in(above_standard_streams(pipe_fds[0]));
      unique_fd out(above_standard_streams(pipe_fds[1]));
      if (in.get() < 0 || out.get() < 0) {
        result.detail = fmt::format("fcntl: {}", std::strerror(errno));
        return result;
      }
      std::string why;
      std::uint64_t generation = 0;
      const bool sent = send(request.size(), request, out.get(), why, generation);
      out.reset(); // the server holds its own copy now; ours would hide the end of file
      if (!sent) {
        result.detail = std::move(why);
        return result;
      }
      receive(in.get(), deadline, stop, result);
      if (result.outcome != job_outcome::lost || result.worker > 0) return result;
      std::lock_guard lock(mutex_);
      if (generation_ != generation) continue; // another caller has already replaced it
      if (server_alive()) return result;       // alive but could not fork (EAGAIN): do not re-fork the caller
      stop_server();
    }
    return result;
  }

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
  [[nodiscard]] std::unique_ptr<warm_worker> spawn(std::string& why) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      why = fmt::format("socketpair: {}", std::strerror(errno));
      return nullptr;
    }
    auto w = std::make_unique<warm_worker>();
    w->channel.reset(above_standard_streams(sv[0]));
    unique_fd theirs(above_standard_streams(sv[1]));
    if (w->channel.get() < 0 || theirs.get() < 0) {
      why = fmt::format("fcntl: {}", std::strerror(errno));
      return nullptr;
    }
    std::uint64_t generation = 0;
    if (!send(fork_process::spawn_marker, {}, theirs.get(), why, generation)) return nullptr;
    return w;
  }

  /// Forks the `prestart` workers. Call with neither mutex held.
  void prestart_workers() {
    const std::size_t n = std::min(warm_.prestart, warm_.count);
    for (std::size_t i = 0; i < n; ++i) {
      {
        std::lock_guard pool(pool_mutex_);
        if (live_ >= warm_.count) return;
        ++live_;
      }
      std::string why;
      auto w = spawn(why);
      std::lock_guard pool(pool_mutex_);
      if (!w) {
        --live_;
        return;
      }
      idle_.push_back(std::move(w));
    }
  }

  /// Whether an idle worker is still there: reads what it sent while idle (its pid, or its end).
  static bool still_alive(warm_worker& w) {
    char chunk[4096];
    for (;;) {
      pollfd pfd{w.channel.get(), POLLIN | POLLRDHUP, 0};
      const int ready = ::poll(&pfd, 1, 0);
      if (ready == 0) break;
      if (ready < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
      const ssize_t got = ::read(w.channel.get(), chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      w.records.append(chunk, static_cast<std::size_t>(got));
    }
    return !w.records.ended();
  }

  /// Takes an idle live worker, or spawns one while fewer than `count` live; null when all are busy
  /// (or none can be spawned).
  [[nodiscard]] std::unique_ptr<warm_worker> take_worker() {
    {
      std::lock_guard pool(pool_mutex_);
      while (!idle_.empty()) {
        auto w = std::move(idle_.back());
        idle_.pop_back();
        if (still_alive(*w)) return w;
        --live_; // died while idle (killed from outside, or its server's restart): drop it
      }
      if (live_ >= warm_.count) return nullptr;
      ++live_;
    }
    std::string why;
    auto w = spawn(why);
    if (!w) {
      std::lock_guard pool(pool_mutex_);
      --live_;
    }
    return w;
  }

  /// Gives a worker back (kept for the next job) or drops it (stopped, dead, or retired).
  void release_worker(std::unique_ptr<warm_worker> w, bool keep) {
    std::lock_guard pool(pool_mutex_);
    if (keep && w->jobs < warm_.jobs_per_worker) {
      idle_.push_back(std::move(w));
      return;
    }
    --live_;
    w.reset();
  }

  /// One job on a persistent worker; nullopt when none is free (the caller forks one for the job).
  [[nodiscard]] std::optional<job_result> run_warm(std::string_view request,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const std::stop_token& stop) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto w = take_worker();
      if (!w) return std::nullopt;
      job_result result;
      auto& rec = w->records;
      rec.next_job();
      const std::uint64_t size = request.size();
      const std::string_view head(reinterpret_cast<const char*>(&size), sizeof size);
      if (!fork_process::write_two(w->channel.get(), head, request, MSG_NOSIGNAL)) {
        release_worker(std::move(w), false); // gone before it took the job: safe to try another
        continue;
      }
      ++w->jobs;
      bool gone = false; // the channel ended without the monitor's last record
      char chunk[65536];
      while (!rec.answered() && !rec.ended() && !gone) {
        const bool late = std::chrono::steady_clock::now() >= deadline;
        if (late || stop.stop_requested()) {
          // Dropping the worker shuts its channel down: its monitor kills it.
          result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
          result.detail = late ? "killed at its deadline" : "killed on a stop request";
          result.worker = rec.pid;
          release_worker(std::move(w), false);
          return result;
        }
        pollfd pfd{w->channel.get(), POLLIN, 0};
        const int ready = ::poll(&pfd, 1, wait_ms(deadline));
        if (ready < 0 && errno != EINTR) gone = true;
        if (ready <= 0) continue;
        const ssize_t got = ::read(w->channel.get(), chunk, sizeof chunk);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) gone = true; // worker and monitor both gone without a status
        else rec.append(chunk, static_cast<std::size_t>(got));
      }
      result.worker = rec.pid;
      warm_jobs_.fetch_add(1, std::memory_order_relaxed);
      if (rec.answered()) {
        if (rec.reply) {
          result.outcome = job_outcome::ok;
          result.reply = std::move(*rec.reply);
        } else {
          result.outcome = job_outcome::failed;
          result.detail = std::move(*rec.exception);
        }
        release_worker(std::move(w), true);
        return result;
      }
      if (!rec.accepted) {
        release_worker(std::move(w), false); // it died before it took the job: try another worker
        continue;
      }
      result.outcome = job_outcome::crashed;
      result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                                 : std::string("ended before replying (its exit status was not reported)");
      release_worker(std::move(w), false);
      return result;
    }
    return std::nullopt;
  }

  /// How long to wait for the next record: 20 ms (how quickly a deadline or a stop request is noticed
  /// while a job runs), less when the deadline is nearer.
  [[nodiscard]] static int wait_ms(std::chrono::steady_clock::time_point deadline) {
    if (deadline == std::chrono::steady_clock::time_point::max()) return 20;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 20));
  }

  /// Forks the server. Call with `mutex_` held.
  void start() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::system_error(errno, std::generic_category(), "fork_server: socketpair");
    sv[0] = above_standard_streams(sv[0]);
    sv[1] = above_standard_streams(sv[1]);
    if (sv[0] < 0 || sv[1] < 0) {
      const int e = errno;
      if (sv[0] >= 0) ::close(sv[0]);
      if (sv[1] >= 0) ::close(sv[1]);
      throw std::system_error(e, std::generic_category(), "fork_server: fcntl");
    }
    pid_t pid;
    {
      std::unique_lock<std::shared_mutex> exclusive;
      if (fork_lock_) exclusive = std::unique_lock(*fork_lock_);
      pid = ::fork();
    }
    if (pid < 0) {
      const int e = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      throw std::system_error(e, std::generic_category(), "fork_server: fork");
    }
    if (pid == 0) {
      ::close(sv[0]);
      fork_process::serve(sv[1], job_, context_, warm_.warm_up);
    }
    ::close(sv[1]);
    socket_ = sv[0];
    server_ = pid;
    ++generation_;
  }

  /// Whether the server process still runs. Call with `mutex_` held.
  [[nodiscard]] bool server_alive() const {
    if (server_ <= 0 || socket_ < 0) return false;
    // The server never writes to its socket, so any event on ours means its end is closed. A dying
    // server closes its descriptors before it can be waited for, and the pipe end it held (which
    // told the caller) is closed after its socket: this sees the death the caller just saw.
    pollfd pfd{socket_, POLLIN | POLLRDHUP, 0};
    if (::poll(&pfd, 1, 0) != 0) return false;
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(server_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
  }

  /// Ends and reaps the server. Call with `mutex_` held.
  void stop_server() {
    if (socket_ >= 0) {
      // shutdown, not just close: a child the caller forked (without exec) may hold a copy of the
      // socket, and the server must see its end of file all the same.
      ::shutdown(socket_, SHUT_RDWR);
      ::close(socket_);
    }
    socket_ = -1;
    if (server_ > 0) {
      // It ends on its socket's end of file, normally within a millisecond: looked for after 50 us,
      // then at doubling intervals up to 10 ms (a fixed 10 ms nap was 10 ms of every isolated tuning's
      // wall time, 1% of the CPU demo's); one that does not end (stopped, wedged) is killed after ~1 s.
      bool reaped = false;
      useconds_t nap = 50;
      for (useconds_t waited = 0; waited < 1'000'000 && !reaped; waited += nap, nap = std::min<useconds_t>(2 * nap, 10'000)) {
        const pid_t r = ::waitpid(server_, nullptr, WNOHANG);
        reaped = r == server_ || (r < 0 && errno != EINTR); // ECHILD: someone else reaped it
        if (!reaped) ::usleep(nap);
      }
      if (!reaped) {
        ::kill(server_, SIGKILL);
        while (::waitpid(server_, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
    }
    server_ = -1;
  }

  /// Sends one request with `fd` attached; restarts a dead server once. `generation` says which
  /// server took it.
  bool send(std::uint64_t header, std::string_view request, int fd, std::string& why, std::uint64_t& generation) {
    std::lock_guard lock(mutex_);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (socket_ < 0) {
        try {
          start();
        } catch (const std::system_error& e) {
          why = e.what();
          return false;
        }
      }
      generation = generation_;
      if (send_locked(header, request, fd, why)) return true;
      stop_server(); // the server is gone (or the stream is out of step): start another
    }
    return false;
  }

  bool send_locked(std::uint64_t header, std::string_view request, int fd, std::string& why) const {
    std::uint64_t size = header;
    fork_process::header_message m(size);
    msghdr& msg = m.msg;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do n = ::sendmsg(socket_, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof size)) {
      why = fmt::format("the server is gone (sendmsg: {})", n < 0 ? std::strerror(errno) : "short write");
      return false;
    }
    std::size_t done = 0;
    while (done < request.size()) {
      ssize_t w = ::send(socket_, request.data() + done, request.size() - done, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        why = fmt::format("the server is gone (send: {})", w < 0 ? std::strerror(errno) : "closed");
        return false;
      }
      done += static_cast<std::size_t>(w);
    }
    return true;
  }

  /// Reads the records of one job from `in` until the job has replied and its exit status is in, or
  /// the pipe ends, or the caller gives up (deadline, stop request).
  static void receive(int in, std::chrono::steady_clock::time_point deadline, const std::stop_token& stop,
                      job_result& result) {
    fork_process::job_records rec;
    char chunk[65536];
    while (!rec.ended()) { // the monitor's record is the last one
      const bool late = std::chrono::steady_clock::now() >= deadline;
      // Once the job has answered, only its exit status is missing, and the monitor sends it next.
      if (!rec.answered() && (late || stop.stop_requested())) {
        // Stop listening: closing the pipe (the caller does) tells the monitor to kill the worker.
        result.worker = rec.pid;
        result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
        result.detail = late ? "killed at its deadline" : "killed on a stop request";
        return;
      }
      pollfd pfd{in, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, wait_ms(deadline));
      if (ready < 0 && errno != EINTR) {
        result.worker = rec.pid;
        result.outcome = job_outcome::lost;
        result.detail = fmt::format("poll: {}", std::strerror(errno));
        return;
      }
      if (ready <= 0) continue;
      const ssize_t got = ::read(in, chunk, sizeof chunk);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) break; // every writer (worker, monitor) has ended
      rec.append(chunk, static_cast<std::size_t>(got));
    }
    result.worker = rec.pid;
    const bool clean_exit = rec.status && WIFEXITED(*rec.status) && WEXITSTATUS(*rec.status) == 0;
    if (rec.exception && clean_exit) {
      result.outcome = job_outcome::failed;
      result.detail = std::move(*rec.exception);
      return;
    }
    if (rec.reply && clean_exit) {
      result.outcome = job_outcome::ok;
      result.reply = std::move(*rec.reply);
      return;
    }
    if (result.worker <= 0) {
      result.outcome = job_outcome::lost;
      result.detail = rec.fork_errno
                          ? fmt::format("the server could not start a worker: fork: {}", std::strerror(*rec.fork_errno))
                          : std::string("the server ended before starting the job");
      return;
    }
    result.outcome = job_outcome::crashed;
    result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                               : std::string("ended before replying (its exit status was not reported)");
  }

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
/// sent again, to a new worker. Not thread-safe: one caller at a time.
class fork_server_lane {
public:
  explicit fork_server_lane(fork_server& server) : server_(&server) {}
  fork_server_lane(const fork_server_lane&) = delete;
  fork_server_lane& operator=(const fork_server_lane&) = delete;
  ~fork_server_lane() { drop(); }

  /// Jobs sent and not yet received.
  [[nodiscard]] std::size_t in_flight() const noexcept { return sent_.size(); }

  /// Sends `request` behind the jobs in flight, without waiting.
  void send(std::string_view request) {
    sent_.emplace_back(request);
    if (worker_ && !write(*worker_, sent_.back())) drop_worker(); // receive() sends it again
  }

  /// The outcome of the oldest job in flight, waiting for it until `deadline` or a stop request (then
  /// the worker is killed, and the jobs behind it go to a new one); `lost` when none is in flight or no
  /// worker can be had.
  [[nodiscard]] job_result receive(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop = {}) {
    job_result result;
    if (sent_.empty()) {
      result.detail = "no job in flight";
      return result;
    }
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!worker_ && !take(result.detail)) return result;
      auto& rec = worker_->records;
      bool gone = false; // the channel ended without the monitor's last record
      char chunk[65536];
      while (!rec.answered() && !rec.ended() && !gone) {
        const bool late = std::chrono::steady_clock::now() >= deadline;
        if (late || stop.stop_requested()) {
          result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
          result.detail = late ? "killed at its deadline" : "killed on a stop request";
          result.worker = rec.pid;
          finish_front(); // killed with its worker: the jobs behind it go to the next one
          return result;
        }
        pollfd pfd{worker_->channel.get(), POLLIN, 0};
        const int ready = ::poll(&pfd, 1, fork_server::wait_ms(deadline));
        if (ready < 0 && errno != EINTR) gone = true;
        if (ready <= 0) continue;
        const ssize_t got = ::read(worker_->channel.get(), chunk, sizeof chunk);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) gone = true;
        else rec.append(chunk, static_cast<std::size_t>(got));
      }
      result.worker = rec.pid;
      server_->warm_jobs_.fetch_add(1, std::memory_order_relaxed);
      if (rec.answered()) {
        if (rec.reply) {
          result.outcome = job_outcome::ok;
          result.reply = std::move(*rec.reply);
        } else {
          result.outcome = job_outcome::failed;
          result.detail = std::move(*rec.exception);
        }
        sent_.pop_front();
        ++worker_->jobs;
        rec.next_job();
        return result;
      }
      if (!rec.accepted) { // it died before it took the job: every job in flight goes to another worker
        drop_worker();
        continue;
      }
      result.outcome = job_outcome::crashed;
      result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                                 : std::string("ended before replying (its exit status was not reported)");
      finish_front();
      return result;
    }
    result.outcome = job_outcome::lost;
    result.detail = "no persistent worker could take the job";
    return result;
  }

private:
  /// A worker for this lane, with every job in flight sent to it; false (and `why`) if none.
  bool take(std::string& why) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      worker_ = server_->take_worker();
      if (!worker_) {
        why = "no persistent worker could be started (the server is gone, or at its limit)";
        return false;
      }
      worker_->records.one_answer = true;
      worker_->records.next_job();
      bool sent = true;
      for (const auto& r : sent_) sent = sent && write(*worker_, r);
      if (sent) return true;
      drop_worker();
    }
    why = "no persistent worker could be sent the job";
    return false;
  }

  static bool write(fork_server::warm_worker& w, const std::string& request) {
    const std::uint64_t size = request.size();
    return fork_process::write_two(w.channel.get(), std::string_view(reinterpret_cast<const char*>(&size), sizeof size),
                                   request, MSG_NOSIGNAL);
  }

  /// The oldest job has its (fatal) outcome: its worker is dropped, and the jobs behind it are sent to a
  /// new one now, so that it starts them while the caller handles this outcome.
  void finish_front() {
    sent_.pop_front();
    drop_worker();
    std::string why;
    if (!sent_.empty()) (void)take(why); // failing here, receive() tries again and reports it
  }

  void drop_worker() {
    if (worker_) server_->release_worker(std::move(worker_), false);
  }

  /// Gives the worker back for other jobs when nothing of this lane is queued on it; else drops it.
  void drop() {
    if (!worker_) return;
    const bool idle = sent_.empty() && worker_->records.pending.empty();
    worker_->records.one_answer = false;
    server_->release_worker(std::move(worker_), idle);
  }

  fork_server* server_;
  std::unique_ptr<fork_server::warm_worker> worker_;
  std::deque<std::string> sent_; ///< requests in flight, oldest first
};

} // namespace cotune::detail
