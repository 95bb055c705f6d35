#pragma once
// Test helpers: run a function in a child process as another user (nobody, uid 65534), for tests of
// what a second local user can and cannot do to a cache. Needs root; tests skip with a WARN otherwise.

#include <functional>

#include <grp.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cotune_test {

inline constexpr uid_t nobody_uid = 65534;
inline constexpr gid_t nobody_gid = 65534;

/// True when this process may switch to another user (it runs as root).
[[nodiscard]] inline bool can_become_another_user() { return ::geteuid() == 0; }

/// Runs `f` in a forked child that has become nobody (uid and gid 65534, no supplementary groups) and
/// returns its exit status: what `f` returns, 98 if `f` threw, 99 if the switch failed.
[[nodiscard]] inline int run_as_nobody(const std::function<int()>& f) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(nobody_gid) != 0 || ::setuid(nobody_uid) != 0) ::_exit(99);
    int rc = 98;
    try {
      rc = f();
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

} // namespace cotune_test
