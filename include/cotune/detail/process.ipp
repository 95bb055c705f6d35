#pragma once
/// \file The bodies of detail/process.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/detail/process.hpp>

namespace cotune::detail {

COTUNE_DECL std::vector<char*> merged_environment(const std::vector<std::string>& env) {
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('=') + 1); // "NAME="
    bool replaced = false;
    for (const auto& o : env) replaced = replaced || std::string_view(o).starts_with(name);
    if (!replaced) envp.push_back(*e);
  }
  for (const auto& o : env) envp.push_back(const_cast<char*>(o.c_str()));
  envp.push_back(nullptr);
  return envp;
}

COTUNE_DECL std::string wait_status_text(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return fmt::format(COTUNE_FMT("killed by signal {} ({})"), WTERMSIG(status), name ? name : "unknown");
  }
  if (WIFEXITED(status)) return fmt::format(COTUNE_FMT("exited with status {}"), WEXITSTATUS(status));
  return fmt::format(COTUNE_FMT("ended with wait status {:#x}"), status);
}

COTUNE_DECL child_process::child_process(const std::string& path, const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                           int channel) {
  // The channel goes to descriptor 3 there; one that already is 3 here would stay close-on-exec.
  int passed = channel, duplicate = -1;
  if (passed <= 3) {
    duplicate = passed = ::fcntl(channel, F_DUPFD_CLOEXEC, 4);
    if (passed < 0) throw std::system_error(errno, std::generic_category(), "fcntl(F_DUPFD_CLOEXEC)");
  }
  auto envp = merged_environment(env);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, passed, 3);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const int rc = ::posix_spawn(&pid_, path.c_str(), &actions, nullptr, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (duplicate >= 0) ::close(duplicate);
  if (rc != 0) {
    pid_ = -1;
    throw std::system_error(rc, std::generic_category(), fmt::format(COTUNE_FMT("posix_spawn of {}"), path));
  }
}

COTUNE_DECL std::string child_process::reap() noexcept {
  if (pid_ <= 0) return "gone";
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (r < 0) return "gone";
  try {
    return wait_status_text(status);
  } catch (...) {
    return "ended";
  }
}

COTUNE_DECL std::string child_process::reap_within(std::chrono::milliseconds grace) noexcept {
  if (pid_ <= 0) return "gone";
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      try {
        return wait_status_text(status);
      } catch (...) {
        return "ended";
      }
    }
    if (r < 0 && errno != EINTR) {
      pid_ = -1;
      return "gone";
    }
    if (std::chrono::steady_clock::now() >= until) break;
    ::usleep(2000);
  }
  kill();
  try {
    return fmt::format(COTUNE_FMT("still running {} ms after its channel closed, so killed"), grace.count());
  } catch (...) {
    return "killed";
  }
}

COTUNE_DECL process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                       std::stop_token stop, const std::vector<std::string>& env) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty command");
  auto envp = merged_environment(env);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
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
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw std::system_error(rc, std::generic_category(), fmt::format(COTUNE_FMT("cannot start '{}'"), argv[0]));
  }

  process_result result;
  const auto start = std::chrono::steady_clock::now();
  // How long to keep reading once the child has ended or been killed: output already in the pipe is
  // read at once, and a process that left the group but holds the pipe cannot stall the caller longer.
  constexpr auto drain_grace = std::chrono::seconds(1);
  std::optional<std::chrono::steady_clock::time_point> ended;
  bool killed = false, exited = false, eof = false;
  char buf[4096];
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!killed && !exited) {
      const bool late = timeout.count() > 0 && now - start > timeout;
      if (late || stop.stop_requested()) {
        (late ? result.timed_out : result.cancelled) = true;
        ::kill(-pid, SIGKILL);
        killed = true;
        ended = now;
      }
    }
    if (!exited) {
      siginfo_t info{};
      // WNOWAIT leaves the child a zombie, so its pid (the group's id) cannot be reused before the
      // stragglers of its group are killed: nothing the command started outlives it.
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        exited = true;
        ::kill(-pid, SIGKILL);
        if (!ended) ended = now;
      }
    }
    if (eof && exited) break;
    if (ended && now - *ended > drain_grace) break;
    pollfd pfd{eof ? -1 : pipe_fds[0], POLLIN, 0}; // a negative fd is skipped: just wait
    // 20 ms: how quickly a deadline, a stop request or the exit is noticed while output flows; once the
    // output has ended the exit is imminent, so look again after 1 ms (20 ms here was most of a warm
    // start: every `c++ --version` paid it).
    int n = ::poll(&pfd, 1, eof ? 1 : 20);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(pipe_fds[0], buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof = true; // every writer has exited or closed the pipe
      continue;
    }
    result.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  }
  return result;
}

} // namespace cotune::detail
