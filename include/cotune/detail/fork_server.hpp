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

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
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

#include <fmt/format.h>

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

/// "killed by signal 11 (Segmentation fault)" or "exited with status 3".
[[nodiscard]] inline std::string wait_status_text(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "unknown");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {:#x}", status);
}


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
  using job_function = std::string (*)(const void* context, std::string_view request);

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

  /// A request's 8-byte size header with room for one descriptor (SCM_RIGHTS) beside it.
  struct header_message {
    explicit header_message(std::uint64_t& size) : iov{&size, sizeof size} {
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
    }
    header_message(const header_message&) = delete;
    header_message& operator=(const header_message&) = delete;
    iovec iov;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
  };

  // 'A': a persistent worker has read a job and starts it. Without it, a worker that died while idle
  // (its death reported a moment after the job was sent) could not be told from one the job crashed.
  static constexpr char tag_pid = 'P', tag_reply = 'R', tag_exception = 'X', tag_status = 'S', tag_fork_failed = 'F',
                        tag_accepted = 'A';

  /// A request header that asks for a persistent worker instead of carrying a job.
  static constexpr std::uint64_t spawn_marker = ~std::uint64_t{0};

  /// The caller's side of one persistent worker: its channel, and records read ahead on it.
  struct warm_worker {
    unique_fd channel;
    pid_t pid = -1;
    std::size_t jobs = 0;
    std::string pending; ///< bytes read but not yet parsed
    bool accepted = false; ///< it has read the job in hand (an 'A' record)
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
    if (!send(spawn_marker, {}, theirs.get(), why, generation)) return nullptr;
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

  /// Parses the complete records in `w.pending`; sets `dead` on a status record.
  static void parse_records(warm_worker& w, job_result& result, bool& have_reply, bool& have_exception, bool& dead,
                            int& status) {
    while (w.pending.size() >= 9) {
      const char tag = w.pending[0];
      std::uint64_t value = 0;
      std::memcpy(&value, w.pending.data() + 1, sizeof value);
      const bool sized = tag == tag_reply || tag == tag_exception;
      if (sized && w.pending.size() - 9 < value) return;
      const std::size_t used = 9 + (sized ? static_cast<std::size_t>(value) : 0);
      if (tag == tag_pid) w.pid = static_cast<pid_t>(value);
      else if (tag == tag_accepted) w.accepted = true;
      else if (tag == tag_reply) {
        result.reply.assign(w.pending, 9, static_cast<std::size_t>(value));
        have_reply = true;
      } else if (tag == tag_exception) {
        result.detail.assign(w.pending, 9, static_cast<std::size_t>(value));
        have_exception = true;
      } else if (tag == tag_status) {
        status = static_cast<int>(value);
        dead = true;
      } else if (tag == tag_fork_failed) {
        dead = true;
      }
      w.pending.erase(0, used);
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
      w.pending.append(chunk, static_cast<std::size_t>(got));
    }
    job_result ignored;
    bool reply = false, exception = false, dead = false;
    int status = 0;
    parse_records(w, ignored, reply, exception, dead, status);
    return !dead;
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
      w->accepted = false;
      const std::uint64_t size = request.size();
      if (!write_all_nosignal(w->channel.get(), &size, sizeof size) ||
          !write_all_nosignal(w->channel.get(), request.data(), request.size())) {
        release_worker(std::move(w), false); // gone before it took the job: safe to try another
        continue;
      }
      ++w->jobs;
      bool have_reply = false, have_exception = false, dead = false;
      int status = -1; // -1: not reported
      char chunk[65536];
      for (;;) {
        parse_records(*w, result, have_reply, have_exception, dead, status);
        if (have_reply || have_exception || dead) break;
        const bool late = std::chrono::steady_clock::now() >= deadline;
        if (late || stop.stop_requested()) {
          // Dropping the worker shuts its channel down: its monitor kills it.
          result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
          result.detail = late ? "killed at its deadline" : "killed on a stop request";
          result.worker = w->pid;
          release_worker(std::move(w), false);
          return result;
        }
        // 20 ms: how quickly a deadline or a stop request is noticed while a job runs (as for forked jobs).
        int wait_ms = 20;
        if (deadline != std::chrono::steady_clock::time_point::max()) {
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
          wait_ms = static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 20));
        }
        pollfd pfd{w->channel.get(), POLLIN, 0};
        const int ready = ::poll(&pfd, 1, wait_ms);
        if (ready < 0 && errno != EINTR) {
          dead = true;
          break;
        }
        if (ready <= 0) continue;
        const ssize_t got = ::read(w->channel.get(), chunk, sizeof chunk);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) {
          dead = true; // worker and monitor both gone without a status
          break;
        }
        w->pending.append(chunk, static_cast<std::size_t>(got));
      }
      result.worker = w->pid;
      warm_jobs_.fetch_add(1, std::memory_order_relaxed);
      if (have_reply) {
        result.outcome = job_outcome::ok;
        release_worker(std::move(w), true);
        return result;
      }
      if (have_exception) {
        result.outcome = job_outcome::failed;
        release_worker(std::move(w), true);
        return result;
      }
      if (!w->accepted) {
        release_worker(std::move(w), false); // it died before it took the job: try another worker
        continue;
      }
      result.reply.clear();
      result.outcome = job_outcome::crashed;
      result.detail = status >= 0 ? wait_status_text(status) + " before replying"
                                  : std::string("ended before replying (its exit status was not reported)");
      release_worker(std::move(w), false);
      return result;
    }
    return std::nullopt;
  }

  static bool write_all_nosignal(int fd, const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
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
      serve(sv[1], job_, context_, warm_.warm_up);
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
      // It ends on its socket's end of file; one that does not (stopped, wedged) is killed after 1 s.
      bool reaped = false;
      for (int i = 0; i < 100 && !reaped; ++i) {
        const pid_t r = ::waitpid(server_, nullptr, WNOHANG);
        reaped = r == server_ || (r < 0 && errno != EINTR); // ECHILD: someone else reaped it
        if (!reaped) ::usleep(10'000);
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
    header_message m(size);
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
    std::string buffer;
    bool have_reply = false, have_exception = false, have_status = false, fork_failed = false;
    int status = 0;
    std::string failure; // the job's exception, or the monitor's fork error
    char chunk[65536];
    for (;;) {
      // Parse what has arrived.
      while (buffer.size() >= 9) {
        const char tag = buffer[0];
        std::uint64_t value = 0;
        std::memcpy(&value, buffer.data() + 1, sizeof value);
        const bool sized = tag == tag_reply || tag == tag_exception;
        if (sized && buffer.size() - 9 < value) break;
        const std::size_t used = 9 + (sized ? static_cast<std::size_t>(value) : 0);
        if (tag == tag_pid) result.worker = static_cast<pid_t>(value);
        else if (tag == tag_reply) {
          result.reply.assign(buffer, 9, static_cast<std::size_t>(value));
          have_reply = true;
        } else if (tag == tag_exception) {
          failure.assign(buffer, 9, static_cast<std::size_t>(value));
          have_exception = true;
        } else if (tag == tag_status) {
          status = static_cast<int>(value);
          have_status = true;
        } else if (tag == tag_fork_failed) {
          failure = fmt::format("fork: {}", std::strerror(static_cast<int>(value)));
          fork_failed = true;
        }
        buffer.erase(0, used);
      }
      if (have_status || fork_failed) break; // the monitor's record is the last one
      const bool late = std::chrono::steady_clock::now() >= deadline;
      // Once the job has answered, only its exit status is missing, and the monitor sends it next.
      if (!have_reply && !have_exception && (late || stop.stop_requested())) {
        // Stop listening: closing the pipe (the caller does) tells the monitor to kill the worker.
        result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
        result.reply.clear();
        result.detail = late ? "killed at its deadline" : "killed on a stop request";
        return;
      }
      // 20 ms: how quickly a deadline or a stop request is noticed while a job runs.
      int wait_ms = 20;
      if (deadline != std::chrono::steady_clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        wait_ms = static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 20));
      }
      pollfd pfd{in, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, wait_ms);
      if (ready < 0 && errno != EINTR) {
        result.outcome = job_outcome::lost;
        result.detail = fmt::format("poll: {}", std::strerror(errno));
        return;
      }
      if (ready <= 0) continue;
      const ssize_t got = ::read(in, chunk, sizeof chunk);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) break; // every writer (worker, monitor) has ended
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    const bool clean_exit = have_status && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (have_exception && clean_exit) {
      result.outcome = job_outcome::failed;
      result.detail = std::move(failure);
      return;
    }
    if (have_reply && clean_exit) {
      result.outcome = job_outcome::ok;
      return;
    }
    result.reply.clear();
    if (result.worker <= 0) {
      result.outcome = job_outcome::lost;
      result.detail = fork_failed ? "the server could not start a worker: " + failure
                                  : std::string("the server ended before starting the job");
      return;
    }
    result.outcome = job_outcome::crashed;
    result.detail = have_status ? wait_status_text(status) + " before replying"
                                : std::string("ended before replying (its exit status was not reported)");
  }

  // ---- everything below runs in the forked server, monitors and workers ----

  /// Moves all `size` bytes through `io` (::read or ::write), again after a signal; false on an end
  /// of file or an error.
  template <class Byte, class Io>
  static bool all_bytes(int fd, Byte* p, std::size_t size, Io io) {
    while (size > 0) {
      const ssize_t n = io(fd, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
  static bool write_all(int fd, const void* data, std::size_t size) {
    return all_bytes(fd, static_cast<const char*>(data), size, ::write);
  }
  static bool read_all(int fd, void* data, std::size_t size) {
    return all_bytes(fd, static_cast<char*>(data), size, ::read);
  }

  static bool write_record(int fd, char tag, std::uint64_t value, std::string_view data = {}) {
    char head[9];
    head[0] = tag;
    std::memcpy(head + 1, &value, sizeof value);
    return write_all(fd, head, sizeof head) && write_all(fd, data.data(), data.size());
  }

  /// Closes every descriptor from 3 up, except `keep`.
  static void close_inherited(int keep) {
#ifdef SYS_close_range
    if (keep > 3) (void)::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
    if (::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0) return;
#endif
    // A kernel before 5.9: walk the descriptor table.
    if (DIR* dir = ::opendir("/proc/self/fd")) {
      const int own = ::dirfd(dir);
      while (dirent* e = ::readdir(dir)) {
        const int fd = std::atoi(e->d_name);
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= 3 && fd != keep && fd != own) ::close(fd);
      }
      ::closedir(dir);
      return;
    }
    const long max = ::sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < (max > 0 ? max : 1024); ++fd)
      if (fd != keep) ::close(fd);
  }

  [[noreturn]] static void serve(int socket, job_function job, const void* context,
                                 void (*warm_up)(const void*)) {
    (void)::setsid(); // its own session and group: signals for the caller's terminal group pass it by
    // Default handling for every signal (the caller's handlers would run the caller's code here),
    // none blocked (the forking thread's mask may block some), and monitors reaped automatically.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) (void)::sigaction(s, &dfl, nullptr);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    (void)::sigaction(SIGCHLD, &ign, nullptr);
    sigset_t none;
    sigemptyset(&none);
    (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
    close_inherited(socket); // `socket` is >= 3 (start() moved it)
    if (const int null = ::open("/dev/null", O_RDWR); null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      if (null > 2) ::close(null);
    }
    if (warm_up) {
      try {
        warm_up(context);
      } catch (...) {
        // A warm-up is an optimisation: workers then warm up on their first job.
      }
    }

    for (;;) {
      std::uint64_t size = 0;
      int fd = -1;
      if (!receive_header(socket, size, fd)) ::_exit(0); // the caller closed the socket, or is gone
      unique_fd out(fd);
      if (size == spawn_marker) {
        if (out.get() >= 0 && ::_Fork() == 0) {
          ::close(socket);
          supervise_persistent(out.get(), job, context);
        }
        continue;
      }
      std::string request;
      try {
        request.resize(static_cast<std::size_t>(size));
      } catch (...) {
        ::_exit(1);
      }
      if (!read_all(socket, request.data(), request.size())) ::_exit(0);
      if (out.get() < 0) continue;
      // _Fork: no atfork handlers. The server is single-threaded, so glibc has no lock to reset, and the
      // handlers that libraries of the caller registered (the CUDA driver's) have no business here.
      const pid_t monitor = ::_Fork();
      if (monitor == 0) {
        ::close(socket);
        supervise(out.get(), job, context, request);
      }
      // If the monitor could not be forked, closing the pipe (here) tells the caller: an end of file
      // before any record.
    }
  }

  static bool receive_header(int socket, std::uint64_t& size, int& fd) {
    header_message m(size);
    msghdr& msg = m.msg;
    ssize_t n;
    do n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    // The header is 8 bytes; a stream may deliver it in pieces (the descriptor comes with the first).
    if (n < static_cast<ssize_t>(sizeof size) &&
        !read_all(socket, reinterpret_cast<char*>(&size) + n, sizeof size - static_cast<std::size_t>(n)))
      return false;
    return true;
  }

  [[noreturn]] static void supervise(int out, job_function job, const void* context, const std::string& request) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    (void)::sigaction(SIGCHLD, &dfl, nullptr); // so that waitpid below sees the worker
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    (void)::sigaction(SIGPIPE, &ign, nullptr); // a caller that stopped listening is noticed below
    const pid_t worker = ::_Fork(); // single-threaded too: see serve()
    if (worker == 0) {
      (void)::sigaction(SIGPIPE, &dfl, nullptr);
      work(out, job, context, request);
    }
    if (worker < 0) {
      (void)write_record(out, tag_fork_failed, static_cast<std::uint64_t>(errno));
      ::_exit(0);
    }
    // Wait for the worker to end, killing it if the caller closes its end of the pipe (a deadline, a
    // stop request, or its death), which shows here as POLLERR. The worker is our child and is not
    // reaped before it ends, so its pid cannot name another process when we kill it.
    bool killed = false;
    int exited = -1;
#ifdef SYS_pidfd_open
    exited = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0)); // readable once the worker ends
#endif
    for (;;) {
      pollfd fds[2] = {{out, 0, 0}, {exited, POLLIN, 0}};
      // Without a pidfd (a kernel before 5.3), look again every 10 ms.
      const int n = ::poll(killed ? fds + 1 : fds, killed ? 1 : 2, exited >= 0 ? -1 : 10);
      if (n < 0 && errno != EINTR) break;
      if (!killed && (fds[0].revents & (POLLERR | POLLHUP))) {
        ::kill(worker, SIGKILL);
        killed = true;
      }
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(worker), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == worker)
        break;
    }
    int status = 0;
    while (::waitpid(worker, &status, 0) < 0 && errno == EINTR) {
    }
    (void)write_record(out, tag_status, static_cast<std::uint64_t>(static_cast<unsigned>(status)));
    ::_exit(0);
  }

  /// The monitor of a persistent worker: forks it, kills it when the caller shuts the channel down,
  /// and reports its end on the channel.
  [[noreturn]] static void supervise_persistent(int channel, job_function job, const void* context) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    (void)::sigaction(SIGCHLD, &dfl, nullptr);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    (void)::sigaction(SIGPIPE, &ign, nullptr);
    const pid_t worker = ::_Fork();
    if (worker == 0) {
      (void)::sigaction(SIGPIPE, &dfl, nullptr);
      serve_jobs(channel, job, context);
    }
    if (worker < 0) {
      (void)write_record(channel, tag_fork_failed, static_cast<std::uint64_t>(errno));
      ::_exit(0);
    }
    bool killed = false;
    int exited = -1;
#ifdef SYS_pidfd_open
    exited = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0));
#endif
    for (;;) {
      // Events 0: only the hang-up of the caller's end (the worker reads the requests, not us).
      pollfd fds[2] = {{channel, 0, 0}, {exited, POLLIN, 0}};
      const int n = ::poll(killed ? fds + 1 : fds, killed ? 1 : 2, exited >= 0 ? -1 : 10);
      if (n < 0 && errno != EINTR) break;
      if (!killed && (fds[0].revents & (POLLERR | POLLHUP))) {
        ::kill(worker, SIGKILL);
        killed = true;
      }
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(worker), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == worker)
        break;
    }
    int status = 0;
    while (::waitpid(worker, &status, 0) < 0 && errno == EINTR) {
    }
    (void)write_record(channel, tag_status, static_cast<std::uint64_t>(static_cast<unsigned>(status)));
    ::_exit(0);
  }

  /// A persistent worker: jobs one after another until the caller closes the channel.
  [[noreturn]] static void serve_jobs(int channel, job_function job, const void* context) {
    if (!write_record(channel, tag_pid, static_cast<std::uint64_t>(::getpid()))) ::_exit(0);
    for (;;) {
      std::uint64_t size = 0;
      if (!read_all(channel, &size, sizeof size)) ::_exit(0);
      std::string request;
      try {
        request.resize(static_cast<std::size_t>(size));
      } catch (...) {
        ::_exit(1);
      }
      if (!read_all(channel, request.data(), request.size())) ::_exit(0);
      if (!write_record(channel, tag_accepted, 0)) ::_exit(0);
      std::string reply;
      bool ok = true;
      try {
        reply = job(context, request);
      } catch (const std::exception& e) {
        ok = false;
        reply = e.what();
      } catch (...) {
        ok = false;
        reply = "unknown exception";
      }
      if (!write_record(channel, ok ? tag_reply : tag_exception, reply.size(), reply)) ::_exit(0);
    }
  }

  [[noreturn]] static void work(int out, job_function job, const void* context, const std::string& request) {
    if (!write_record(out, tag_pid, static_cast<std::uint64_t>(::getpid()))) ::_exit(0); // the caller gave up
    std::string reply;
    try {
      reply = job(context, request);
    } catch (const std::exception& e) {
      (void)write_record(out, tag_exception, std::strlen(e.what()), e.what());
      ::_exit(0);
    } catch (...) {
      constexpr std::string_view unknown = "unknown exception";
      (void)write_record(out, tag_exception, unknown.size(), unknown);
      ::_exit(0);
    }
    ::_exit(write_record(out, tag_reply, reply.size(), reply) ? 0 : 1);
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

} // namespace cotune::detail
