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
  explicit header_message(std::uint64_t& size);
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
  void next_job();
  /// Appends bytes read and parses every complete record among them.
  void append(const char* data, std::size_t size);
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
COTUNE_DECL bool write_two(int fd, std::string_view head, std::string_view data, int send_flags = -1);

/// A record: `tag`, `value` (a size, a pid or a status) and `data`, in one write_two (`send_flags` as there).
COTUNE_DECL bool write_record(int fd, char tag, std::uint64_t value, std::string_view data = {}, int send_flags = -1);

/// Closes every descriptor from 3 up, except `keep`.
COTUNE_DECL void close_inherited(int keep);

COTUNE_DECL bool receive_header(int socket, std::uint64_t& size, int& fd);

[[noreturn]] COTUNE_DECL void work(int out, job_function job, const void* context, const std::string& request);

/// A persistent worker: jobs one after another until the caller closes the channel.
[[noreturn]] COTUNE_DECL void serve_jobs(int channel, job_function job, const void* context);

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

/// The server's life. `ready` (if not -1): written 'r' and closed once the server has taken the
/// dynamic loader's list lock (dl_iterate_phdr) and the exit handlers' lock (on_exit): a server forked
/// while another thread of the caller held one of them (in dlopen or dlclose) inherits it held, and
/// glibc does not reset them in a child, so the server never says ready there and the caller forks
/// another.
[[noreturn]] COTUNE_DECL void serve(int socket, job_function job, const void* context, void (*warm_up)(const void*),
                                    int ready = -1);

} // namespace cotune::detail::fork_process

#if COTUNE_HEADER_ONLY
#include <cotune/detail/fork_process.ipp>
#endif
