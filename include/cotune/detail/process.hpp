#pragma once
/// \file Runs a child process with its output captured, a deadline and a stop token.

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/core/errors.hpp>

extern char** environ;

namespace cotune::detail {

struct process_result {
  int exit_code = -1;     ///< exit status, or 128 + signal
  std::string output;     ///< stdout and stderr, interleaved
  bool timed_out = false; ///< killed because the deadline passed
  bool cancelled = false; ///< killed because a stop was requested
};

/// Runs `argv` (argv[0] looked up on PATH) in its own process group, capturing stdout and stderr.
/// Past `timeout` (zero = none) or on a stop request, the whole group is killed (a compiler driver's
/// children too). Throws cotune::error if the program cannot be started.
inline process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = {},
                                  std::stop_token stop = {}) {
  if (argv.empty()) throw error("run_process: empty command");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw error(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw error(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  }

  process_result result;
  const auto start = std::chrono::steady_clock::now();
  bool killed = false;
  char buf[4096];
  for (;;) {
    if (!killed) {
      const bool late = timeout.count() > 0 && std::chrono::steady_clock::now() - start > timeout;
      if (late || stop.stop_requested()) {
        (late ? result.timed_out : result.cancelled) = true;
        ::kill(-pid, SIGKILL);
        killed = true;
      }
    }
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    int n = ::poll(&pfd, 1, 20); // 20 ms: how quickly a deadline or a stop request is noticed
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(pipe_fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break; // EOF: every writer (the group) has exited or closed the pipe
    result.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

} // namespace cotune::detail
