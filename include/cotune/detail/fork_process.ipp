#pragma once
/// \file The bodies of detail/fork_process.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cstddef>

#include <link.h>

#include <cotune/detail/config.hpp>
#include <cotune/detail/fork_process.hpp>

namespace cotune::detail::fork_process {

COTUNE_DECL header_message::header_message(std::uint64_t& size) : iov{&size, sizeof size} {
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
}

COTUNE_DECL void job_records::next_job() {
  accepted = false;
  reply.reset();
  exception.reset();
  append(nullptr, 0);
}

COTUNE_DECL void job_records::append(const char* data, std::size_t size) {
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

COTUNE_DECL bool write_two(int fd, std::string_view head, std::string_view data, int send_flags) {
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

COTUNE_DECL bool write_record(int fd, char tag, std::uint64_t value, std::string_view data, int send_flags) {
  char head[9];
  head[0] = tag;
  std::memcpy(head + 1, &value, sizeof value);
  return write_two(fd, std::string_view(head, sizeof head), data, send_flags);
}

COTUNE_DECL void close_inherited(int keep) {
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

COTUNE_DECL bool receive_header(int socket, std::uint64_t& size, int& fd) {
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

COTUNE_DECL void work(int out, job_function job, const void* context, const std::string& request) {
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

COTUNE_DECL void serve_jobs(int channel, job_function job, const void* context) {
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

COTUNE_DECL void serve(int socket, job_function job, const void* context, void (*warm_up)(const void*), int ready) {
  // Two locks glibc does not reset in a forked child, which another thread of the caller may have
  // held at the fork (in dlopen or dlclose): the loader's list lock, which dl_iterate_phdr takes, and
  // the exit handlers' lock, which on_exit takes (as does a candidate library's registration of its
  // static destructors). Taking each once here blocks for ever if it came locked: then the caller,
  // which waits for the byte, kills this copy and forks another.
  (void)::dl_iterate_phdr([](dl_phdr_info*, std::size_t, void*) { return 1; }, nullptr);
  // A candidate that calls exit(): the program's exit handlers and static destructors would run in
  // its copy (their side effects on files, a crash in one of them reported as the candidate's
  // segfault). Exit handlers run last registered first, so this one ends the copy at once, with the
  // status the candidate gave.
  (void)::on_exit([](int status, void*) { ::_exit(status); }, nullptr);
  if (ready >= 0) {
    const char byte = 'r';
    (void)!::write(ready, &byte, 1);
    ::close(ready);
  }
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
