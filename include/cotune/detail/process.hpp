#pragma once
/// \file Child processes that exec a program: `run_process` runs one with its output captured, a
/// deadline and a stop token; `child_process` keeps one running beside the caller, talking over a
/// descriptor. (Copies of the caller that exec nothing are detail/fork_server.hpp's.)

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <stop_token>
#include <stdexcept>
#include <string>
#include <system_error>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>


extern char** environ;

namespace cotune::detail {

/// The process's environment with `env` entries ("NAME=value") added, replacing same-named variables,
/// and a null after the last, for posix_spawn. The strings stay owned by `environ` and `env`.
[[nodiscard]] COTUNE_DECL std::vector<char*> merged_environment(const std::vector<std::string>& env);

/// "killed by signal 11 (Segmentation fault)" or "exited with status 3".
[[nodiscard]] COTUNE_DECL std::string wait_status_text(int status);

/// A long-lived child process that talks to its parent over one descriptor (the GPU isolation
/// workers): `path` started with `argv`, the environment plus `env` (as `merged_environment`), stdin
/// from /dev/null and `channel` as its descriptor 3. Killed and collected on destruction.
class child_process {
public:
  /// Starts the child. Throws std::system_error when it cannot be spawned.
  child_process(const std::string& path, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                int channel);
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process() { kill(); }

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// Not yet collected (it may have ended without being waited for).
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  /// Waits for the child to end and says how it did (`wait_status_text`); "gone" when it was collected.
  std::string reap() noexcept;
  /// As `reap`, but a child still running after `grace` is killed (SIGKILL) first, and the text says so:
  /// for a child whose channel closed, which should be ending, but may be stuck on its way out.
  std::string reap_within(std::chrono::milliseconds grace) noexcept;

  /// Kills the child (SIGKILL) if it is still there, and collects it.
  void kill() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)reap();
  }

private:
  pid_t pid_ = -1;
};

struct process_result {
  int exit_code = -1;     ///< exit status, or 128 + signal
  int signal = 0;         ///< the signal that ended the program, 0 if it exited
  std::string output;     ///< stdout and stderr, interleaved
  bool timed_out = false; ///< killed because the deadline passed
  bool cancelled = false; ///< killed because a stop was requested
};

/// Runs `argv` (argv[0] looked up on PATH) in its own process group, capturing stdout and stderr.
/// Past `timeout` (zero = none) or on a stop request, the whole group is killed (a compiler driver's
/// children too); when the program ends, whatever it left running in its group is killed as well.
/// `env` entries ("NAME=value") are added to the inherited environment, replacing same-named variables.
/// Throws std::system_error if the program cannot be started (std::invalid_argument for an empty command).
COTUNE_DECL process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = {},
                                  std::stop_token stop = {}, const std::vector<std::string>& env = {});

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/process.ipp>
#endif
