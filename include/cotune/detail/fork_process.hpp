#pragma once
/// \file The process side of `detail::fork_server` (see its file comment for the design and the
/// protocol): what runs in the forked server, in the monitors it forks, and in the workers they fork.
/// Nothing here runs in the caller's process but the protocol's types, constants and record reader,
/// which both sides share. Everything here is single-threaded and ends with _exit: no destructor or atexit handler of
/// the caller's copied state runs in a forked process.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail::fork_process {

/// Runs in the worker: the request in, the reply out. An exception becomes job_outcome::failed.
using job_function = std::string (*)(const void* context, std::string_view request);

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
inline constexpr char tag_pid = 'P', tag_reply = 'R', tag_exception = 'X', tag_status = 'S', tag_fork_failed = 'F',
                      tag_accepted = 'A';

/// A request header that asks for a persistent worker instead of carrying a job.
inline constexpr std::uint64_t spawn_marker = ~std::uint64_t{0};

/// The caller's reading of the records on one job's pipe, or on a persistent worker's channel.
struct job_records {
  std::string pending;                   ///< bytes read but not yet parsed
  pid_t pid = -1;                        ///< 'P': the worker's pid
  bool accepted = false;                 ///< 'A': a persistent worker has read the job in hand
  std::optional<std::string> reply;      ///< 'R': what the job returned
  std::optional<std::string> exception;  ///< 'X': the message of the exception the job threw
  std::optional<int> status;             ///< 'S': the worker's wait status (the monitor's last record)
  std::optional<int> fork_errno;         ///< 'F': the monitor could not fork the worker
  /// Parses no further than one job's answer: the records after it (of a job sent ahead) wait in
  /// `pending` for next_job().
  bool one_answer = false;

  /// Forgets the last job's records (a persistent worker's pid and any records read ahead stay) and
  /// parses what was read ahead.
  void next_job() {
    accepted = false;
    reply.reset();
    exception.reset();
    append(nullptr, 0);
  }
  /// Appends bytes read and parses every complete record among them.
  void append(const char* data, std::size_t size) {
    if (size) pending.append(data, size);
    std::size_t at = 0;
    while (pending.size() - at >= 9 && !(one_answer && answered())) {
      const char tag = pending[at];
      std::uint64_t value = 0;
      std::memcpy(&value, pending.data() + at + 1, sizeof value);
      const bool sized = tag == tag_reply || tag == tag_exception;
      if (sized && pending.size() - at - 9 < value) break;
      const auto body = [&] { return pending.substr(at + 9, static_cast<std::size_t>(value)); };
      if (tag == tag_pid) pid = static_cast<pid_t>(value);
      else if (tag == tag_accepted) accepted = true;
      else if (tag == tag_reply) reply = body();
      else if (tag == tag_exception) exception = body();
      else if (tag == tag_status) status = static_cast<int>(value);
      else if (tag == tag_fork_failed) fork_errno = static_cast<int>(value);
      at += 9 + (sized ? static_cast<std::size_t>(value) : 0);
    }
    pending.erase(0, at);
  }
  /// The job answered (replied or threw).
  [[nodiscard]] bool answered() const noexcept { return reply || exception; }
  /// The monitor has sent its last record: the worker is gone.
  [[nodiscard]] bool ended() const noexcept { return status || fork_errno; }
};

/// Moves all `size` bytes through `io` (::read or ::write), again after a signal; false on an end
/// of file or an error.
template <class Byte, class Io>
inline bool all_bytes(int fd, Byte* p, std::size_t size, Io io) {
  while (size > 0) {
    const ssize_t n = io(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}
inline bool write_all(int fd, const void* data, std::size_t size) {
  return all_bytes(fd, static_cast<const char*>(data), size, ::write);
}
inline bool read_all(int fd, void* data, std::size_t size) {
  return all_bytes(fd, static_cast<char*>(data), size, ::read);
}

/// Writes all of `head` then all of `data` with as few system calls as the descriptor allows (one,
/// normally: a record's tag and its body in one writev, so that the reader wakes once per record, not
/// twice); false on an end of file or an error. `send_flags` (MSG_NOSIGNAL) makes it a sendmsg, for a
/// socket whose peer may be gone without the caller wanting SIGPIPE.
inline bool write_two(int fd, std::string_view head, std::string_view data, int send_flags = -1) {
  iovec parts[2] = {{const_cast<char*>(head.data()), head.size()}, {const_cast<char*>(data.data()), data.size()}};
  iovec* at = parts;
  int count = data.empty() ? 1 : 2;
  while (count > 0) {
    ssize_t n;
    if (send_flags >= 0) {
      msghdr msg{};
      msg.msg_iov = at;
      msg.msg_iovlen = static_cast<decltype(msg.msg_iovlen)>(count);
      n = ::sendmsg(fd, &msg, send_flags);
    } else {
      n = ::writev(fd, at, count);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    auto done = static_cast<std::size_t>(n);
    while (count > 0 && done >= at->iov_len) {
      done -= at->iov_len;
      ++at;
      --count;
    }
    if (count > 0) {
      at->iov_base = static_cast<char*>(at->iov_base) + done;
      at->iov_len -= done;
    }
  }
  return true;
}

inline bool write_record(int fd, char tag, std::uint64_t value, std::string_view data = {}) {
  char head[9];
  head[0] = tag;
  std::memcpy(head + 1, &value, sizeof value);
  return write_two(fd, std::string_view(head, sizeof head), data);
}

/// Closes every descriptor from 3 up, except `keep`.
inline void close_inherited(int keep) {
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

inline bool receive_header(int socket, std::uint64_t& size, int& fd) {
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

[[noreturn]] inline void work(int out, job_function job, const void* context, const std::string& request) {
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

/// A persistent worker: jobs one after another until the caller closes the channel.
[[noreturn]] inline void serve_jobs(int channel, job_function job, const void* context) {
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

/// A monitor: forks the worker, which runs `in_worker(channel)` and never returns; kills the worker if
/// the caller closes or shuts down its end of `channel` (a deadline, a stop request, or its death),
/// which shows here as POLLERR or POLLHUP; then reports the worker's wait status on `channel` ('S'),
/// or 'F' if it could not be forked. The worker is our child and is not reaped before it ends, so its
/// pid cannot name another process when we kill it.
template <class InWorker>
[[noreturn]] void supervise(int channel, InWorker in_worker) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  (void)::sigaction(SIGCHLD, &dfl, nullptr); // so that waitpid below sees the worker
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  (void)::sigaction(SIGPIPE, &ign, nullptr); // a caller that stopped listening is noticed below
  const pid_t worker = ::_Fork();            // single-threaded too: see serve()
  if (worker == 0) {
    (void)::sigaction(SIGPIPE, &dfl, nullptr);
    in_worker(channel);
  }
  if (worker < 0) {
    (void)write_record(channel, tag_fork_failed, static_cast<std::uint64_t>(errno));
    ::_exit(0);
  }
  bool killed = false;
  int exited = -1;
#ifdef SYS_pidfd_open
  exited = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0)); // readable once the worker ends
#endif
  for (;;) {
    // Events 0: only the hang-up of the caller's end (a persistent worker reads its requests, not us).
    pollfd fds[2] = {{channel, 0, 0}, {exited, POLLIN, 0}};
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
  (void)write_record(channel, tag_status, static_cast<std::uint64_t>(static_cast<unsigned>(status)));
  ::_exit(0);
}

[[noreturn]] inline void serve(int socket, job_function job, const void* context,
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
        supervise(out.get(), [&](int channel) { serve_jobs(channel, job, context); });
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
      supervise(out.get(), [&](int channel) { work(channel, job, context, request); });
    }
    // If the monitor could not be forked, closing the pipe (here) tells the caller: an end of file
    // before any record.
  }
}

} // namespace cotune::detail::fork_process
