#pragma once
/// \file `cotune::detail::run_isolated`: runs a function in a forked copy of this process and brings
/// back what it returned (a list of doubles) or why it failed. A segfault, an abort or an infinite loop
/// in the function costs the child alone: the caller learns it crashed (with the signal) or hung (and
/// was killed at the deadline). The child is a copy-on-write image of the caller: it sees the caller's
/// memory as it was at the fork, and nothing it writes comes back.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>

namespace cotune::detail {

/// How an isolated run ended.
struct isolated_result {
  /// `refused`: it did not run, because no isolated process could take it (a CUDA isolation worker
  /// that cannot start, arguments it cannot reach); `detail` says why and the caller runs in-process.
  enum class ending { returned, threw, crashed, hung, refused };
  ending end = ending::crashed;
  std::vector<double> values; ///< what the function returned (ending::returned)
  std::string detail;         ///< the exception's message, the signal or exit status, the deadline
  char kind = 'e';            ///< what it threw: 'e' an error, 'l' a launch error (CUDA workers say)
  double fork_ms = 0;         ///< what the fork itself cost the caller
};

/// What a backend that measures in a worker process of its own (a CUDA isolation worker) is asked
/// for one candidate: one run (`timed` false: before verification, or the only candidate) or a
/// measurement, with the reset_to_zero and restore_value arguments flagged (one flag per argument).
struct worker_task {
  bool timed = true;
  std::vector<bool> zero{}, restore{};
  std::vector<bool> poison{}; ///< filled with 0xFF before the verification run (tune_options::poison_outputs)
  std::int64_t timeout_ms = 0; ///< the first run's deadline (COTUNE_BENCH_TIMEOUT_MS); 0 = none
};

/// What an isolated copy sends back for `call(context)`: "R", a count and the values, or "E" and the
/// exception's message.
[[nodiscard]] COTUNE_DECL std::string isolated_report(std::vector<double> (*call)(void*), void* context);
/// Reads a report `isolated_report` wrote into `result` (returned or threw; crashed if malformed).
COTUNE_DECL void read_isolated_report(const std::string& got, isolated_result& result);
/// How a child that did not report ended, from its wait status ("killed by signal 11 (...)").
[[nodiscard]] COTUNE_DECL std::string ending_of_status(int status);
/// In a freshly forked copy: SIGPIPE ignored, and default actions for the signals a crash raises, so
/// that the copy ends rather than running the program's own handlers.
COTUNE_DECL void prepare_isolated_child();
/// Writes all of [p, p + size) to `fd`, retrying on EINTR; false if the other end is gone.
[[nodiscard]] COTUNE_DECL bool write_all(int fd, const char* p, std::size_t size);

/// Runs `call(context)` in a child process; waits at most `limit`, then kills it. Throws
/// std::system_error if the pipe or the fork fails (the caller may then run in-process).
[[nodiscard]] COTUNE_DECL isolated_result run_isolated_call(std::vector<double> (*call)(void*), void* context,
                                                            std::chrono::milliseconds limit);

/// Runs `f` (returning std::vector<double>) in a child process; waits at most `limit`, then kills it.
/// Throws std::system_error if the pipe or the fork fails (the caller may then run in-process).
template <class F>
[[nodiscard]] isolated_result run_isolated(F&& f, std::chrono::milliseconds limit) {
  // A pointer to the callable, passed by its address: works for functions and const objects alike.
  auto* target = std::addressof(f);
  auto call = [](void* p) -> std::vector<double> { return (**static_cast<decltype(target)*>(p))(); };
  return run_isolated_call(call, &target, limit);
}

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/isolated_run.ipp>
#endif
