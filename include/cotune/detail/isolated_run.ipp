#pragma once
/// \file The body of detail/isolated_run.hpp's fork-and-report (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail {

COTUNE_DECL std::string isolated_report(std::vector<double> (*call)(void*), void* context) {
  std::string out;
  try {
    const std::vector<double> v = call(context);
    out = "R";
    const std::uint64_t n = v.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  } catch (const std::exception& e) {
    out = std::string("E") + e.what();
  } catch (...) {
    out = "Eunknown exception";
  }
  return out;
}

COTUNE_DECL void read_isolated_report(const std::string& got, isolated_result& result) {
  if (!got.empty() && got[0] == 'E') {
    result.end = isolated_result::ending::threw;
    result.detail = got.substr(1);
    return;
  }
  std::uint64_t n = 0;
  if (got.empty() || got[0] != 'R' || got.size() < 1 + sizeof n) {
    result.end = isolated_result::ending::crashed;
    result.detail = "sent a malformed report";
    return;
  }
  std::memcpy(&n, got.data() + 1, sizeof n);
  if (got.size() != 1 + sizeof n + n * sizeof(double)) {
    result.end = isolated_result::ending::crashed;
    result.detail = "sent a truncated report";
    return;
  }
  result.values.resize(n);
  std::memcpy(result.values.data(), got.data() + 1 + sizeof n, n * sizeof(double));
  result.end = isolated_result::ending::returned;
}

COTUNE_DECL std::string ending_of_status(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = ::sigdescr_np(WTERMSIG(status));
    return fmt::format(COTUNE_FMT("killed by signal {} ({})"), WTERMSIG(status), name ? name : "unknown signal");
  }
  return WIFEXITED(status) ? fmt::format(COTUNE_FMT("exited with status {} before reporting"), WEXITSTATUS(status))
                           : std::string("ended without reporting");
}

COTUNE_DECL void prepare_isolated_child() {
  ::signal(SIGPIPE, SIG_IGN);
  // A crash must end the copy: handlers the program installed (a test framework's, a crash
  // reporter's) would otherwise run in it and report the candidate's fault as their own.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) ::signal(sig, SIG_DFL);
}

COTUNE_DECL bool write_all(int fd, const char* p, std::size_t left) {
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return true;
}

COTUNE_DECL isolated_result run_isolated_call(std::vector<double> (*call)(void*), void* context,
                                              std::chrono::milliseconds limit) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "run_isolated: pipe");
  unique_fd read_end(fds[0]), write_end(fds[1]);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "run_isolated: fork");
  if (pid == 0) {
    // The child: only this thread exists. It reports through the pipe and leaves with _exit, running no
    // destructors or atexit handlers of the parent's objects.
    prepare_isolated_child();
    const std::string out = isolated_report(call, context);
    (void)write_all(write_end.get(), out.data(), out.size());
    ::_exit(0);
  }
  isolated_result result;
  result.fork_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_end.reset(); // the child holds the only write end now: end of file when it is gone
  const auto deadline = t0 + limit;
  std::string got;
  bool hung = false;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      hung = true;
      break;
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd pfd{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(wait_ms, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; // end of file: the child is done (or dead)
    got.append(buf, static_cast<std::size_t>(n));
  }
  if (hung) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (hung) {
    result.end = isolated_result::ending::hung;
    result.detail =
        fmt::format(COTUNE_FMT("still running after {} ms (COTUNE_BENCH_TIMEOUT_MS); killed"), limit.count());
    return result;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got.empty()) {
    result.end = isolated_result::ending::crashed;
    result.detail = ending_of_status(status);
    return result;
  }
  read_isolated_report(got, result);
  return result;
}

} // namespace cotune::detail
