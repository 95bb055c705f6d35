// Tests for cotune/tune/tuning_job.hpp: a crashing, aborting or hanging candidate costs one candidate
// (COTUNE_ISOLATE), crashed candidates are quarantined, and a tuning killed midway resumes from its
// journal. Real kernels, real forks, real processes killed with SIGKILL.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/process.hpp>

#include "tuning_fixture.hpp"

using namespace cotune;
using cotune_test::crashing_kernel;
using cotune_test::private_cache;
using cotune_test::quick_bench;

namespace {

using crash_tuner = autotuner<void(int*, int)>;

config candidate(int cost, int crash) { return config{{"COST", cost}, {"CRASH", crash}}; }

std::size_t count_status(const tuning_result& r, candidate_status s) {
  return static_cast<std::size_t>(
      std::count_if(r.candidates.begin(), r.candidates.end(), [&](const candidate_result& c) { return c.status == s; }));
}

/// Runs the child in `scenario` on `cache_dir`; SIGKILLs it after `kill_after` outcome lines (0: never).
/// Returns its output and wait status.
std::pair<std::string, int> run_child(const std::string& cache_dir, const char* scenario, int kill_after) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(COTUNE_CHILD_JOURNAL, COTUNE_CHILD_JOURNAL, cache_dir.c_str(), scenario, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  int outcomes = 0;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    outcomes = 0;
    for (std::size_t at = 0; (at = out.find("measured ", at)) != std::string::npos; ++at) ++outcomes;
    if (kill_after > 0 && outcomes >= kill_after) {
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {out, status};
}

int field(const std::string& out, const std::string& name) {
  const auto at = out.rfind(name + "=");
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + name.size() + 1);
}

int lines_with(const std::string& out, const std::string& text) {
  int n = 0;
  for (std::size_t at = 0; (at = out.find(text, at)) != std::string::npos; ++at) ++n;
  return n;
}

} // namespace

TEST_CASE("run_isolated brings back values, exceptions, crashes and hangs", "[tune][tuning_job][isolation]") {
  using ending = detail::isolated_result::ending;
  const auto ok = detail::run_isolated([] { return std::vector<double>{1.5, 2.5}; }, std::chrono::seconds(10));
  CHECK(ok.end == ending::returned);
  CHECK(ok.values == std::vector<double>{1.5, 2.5});
  const auto threw =
      detail::run_isolated([]() -> std::vector<double> { throw std::runtime_error("bad launch"); }, std::chrono::seconds(10));
  CHECK(threw.end == ending::threw);
  CHECK(threw.detail == "bad launch");
  const auto crashed = detail::run_isolated(
      []() -> std::vector<double> {
        ::raise(SIGSEGV);
        return {};
      },
      std::chrono::seconds(10));
  CHECK(crashed.end == ending::crashed);
  CHECK_THAT(crashed.detail, Catch::Contains("signal 11"));
  const auto exited = detail::run_isolated(
      []() -> std::vector<double> {
        std::_Exit(3);
      },
      std::chrono::seconds(10));
  CHECK(exited.end == ending::crashed);
  CHECK_THAT(exited.detail, Catch::Contains("status 3"));
  const auto t0 = std::chrono::steady_clock::now();
  const auto hung = detail::run_isolated(
      []() -> std::vector<double> {
        for (;;) ::pause();
      },
      std::chrono::milliseconds(300));
  CHECK(hung.end == ending::hung);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)); // killed, not waited for
}

TEST_CASE("with isolation, a segfault, an abort and an endless loop each cost one candidate",
          "[tune][tuning_job][isolation]") {
  private_cache cache;
  auto isolate = knobs().autotuning.isolate.scoped("on");
  auto timeout = knobs().bench.timeout_ms.scoped(1500);
  crash_tuner tuner{crashing_kernel("work_faults"),
                    {candidate(2, 0), candidate(1, 1), candidate(1, 2), candidate(1, 3), candidate(3, 0)},
                    {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 500);
  CHECK(count_status(r, candidate_status::ok) == 2);
  CHECK(r.candidates[1].status == candidate_status::crashed);
  CHECK_THAT(r.candidates[1].reason, Catch::Contains("signal 11") && Catch::Contains("CRASH: 1"));
  CHECK(r.candidates[2].status == candidate_status::crashed);
  CHECK_THAT(r.candidates[2].reason, Catch::Contains("signal 6"));
  CHECK(r.candidates[3].status == candidate_status::hung);
  CHECK_THAT(r.candidates[3].reason, Catch::Contains("COTUNE_BENCH_TIMEOUT_MS"));
  CHECK(r.best().at("CRASH").as_int() == 0);
  tuner(&out, 500); // the winner (COST 2 or 3) runs in this process
  CHECK((out == 1000 * 999 / 2 || out == 1500 * 1499 / 2));
}

TEST_CASE("crashed candidates are quarantined: later tunings of the kernel skip them", "[tune][tuning_job][isolation]") {
  private_cache cache;
  auto isolate = knobs().autotuning.isolate.scoped("on");
  const std::vector<config> configs{candidate(2, 0), candidate(1, 1), candidate(3, 0)};
  crash_tuner first{crashing_kernel("work_quarantine"), configs,
                    {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true, .bench = quick_bench()}};
  int out = 0;
  CHECK(first.tune_now(&out, 300).candidates[1].status == candidate_status::crashed);
  // Another key, another tuner object (as another process would be), isolation back to auto: the
  // quarantine both skips the crashing config and turns isolation on.
  auto automatic = knobs().autotuning.isolate.scoped("auto");
  crash_tuner second{crashing_kernel("work_quarantine"), configs,
                     {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true, .bench = quick_bench()}};
  const auto& r = second.tune_now(&out, 301);
  CHECK(r.candidates[1].status == candidate_status::crashed);
  CHECK_THAT(r.candidates[1].reason, Catch::Contains("quarantined") && Catch::Contains("signal 11"));
  CHECK(count_status(r, candidate_status::ok) == 2);
  // A changed kernel is a new quarantine: the config is tried again (and crashes again, in isolation).
  auto changed = crashing_kernel("work_quarantine");
  changed.code += "\n// changed\n";
  auto on = knobs().autotuning.isolate.scoped("on");
  crash_tuner third{changed, configs, {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true, .bench = quick_bench()}};
  const auto& r3 = third.tune_now(&out, 302);
  CHECK(r3.candidates[1].status == candidate_status::crashed);
  CHECK_THAT(r3.candidates[1].reason, !Catch::Contains("quarantined"));
}

TEST_CASE("a tuning killed midway resumes from its journal, measuring nothing twice", "[tune][tuning_job][journal]") {
  private_cache cache;
  const auto dir = cache.cache_dir().string();
  auto [killed_out, killed_status] = run_child(dir, "slow", 4);
  REQUIRE(WIFSIGNALED(killed_status));
  CHECK(WTERMSIG(killed_status) == SIGKILL);
  auto [out, status] = run_child(dir, "slow", 0);
  INFO(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  // The killed run journaled each outcome right after reporting it: at least 3 of its 4 are in the journal.
  const int resumed = lines_with(out, "resumed=1\n");
  CHECK(resumed >= 3);
  CHECK(resumed < 8);
  // The rerun measured only the others (screening's finalists may then be timed again in full).
  CHECK(lines_with(out, "resumed=0\n") == 8 - resumed);
}

TEST_CASE("after a crash took the process down, the rerun isolates and loses only that candidate",
          "[tune][tuning_job][journal][isolation]") {
  private_cache cache;
  const auto dir = cache.cache_dir().string();
  auto [first_out, first_status] = run_child(dir, "crash", 0);
  INFO(first_out);
  // In-process, candidate 3 (CRASH=1) takes the whole program down: SIGSEGV, or under AddressSanitizer
  // its report and exit status 1.
  REQUIRE_FALSE((WIFEXITED(first_status) && WEXITSTATUS(first_status) == 0));
  if (WIFSIGNALED(first_status)) CHECK(WTERMSIG(first_status) == SIGSEGV);
  auto [out, status] = run_child(dir, "crash", 0);
  INFO(out);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(field(out, "crashed") == 1);
  CHECK(lines_with(out, "resumed=1\n") == 3); // candidates 0-2 were measured before the crash
  CHECK_THAT(out, Catch::Contains("measured 3 crashed"));
}

TEST_CASE("a bad knob value fails the tuning at once, naming the variable, before any candidate compiles",
          "[tune][tuning_job][knobs]") {
  private_cache cache;
  cotune_test::scoped_env bad("COTUNE_COMPILE_TIMEOUT_MS", std::string("abc"));
  crash_tuner tuner{crashing_kernel("work_bad_knob"), {candidate(1, 0), candidate(2, 0)},
                    {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  CHECK_THROWS_AS(tuner(&out, 10), knob_error);
  CHECK_THROWS_WITH(tuner(&out, 10), Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS") && Catch::Contains("abc"));
  CHECK(tuner.compiles() == 0);
}

TEST_CASE("a cache-invalidating knob set to its default value changes no cache key", "[tune][tuning_job][knobs]") {
  const auto unset = knob_registry::instance().invalidating_text();
  {
    auto same = knobs().runtime.debug.scoped(false); // set, to its default
    CHECK(knob_registry::instance().invalidating_text() == unset);
  }
  auto changed = knobs().runtime.debug.scoped(true);
  CHECK(knob_registry::instance().invalidating_text() != unset);
}

TEST_CASE("a host tuning's result shows configs without GPU launch options", "[tune][tuning_job]") {
  private_cache cache;
  crash_tuner tuner{crashing_kernel("work_no_launch"), {candidate(1, 0), candidate(2, 0)},
                    {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 10);
  CHECK_FALSE(r.launch_options);
  CHECK_THAT(r.shown(r.best()), Catch::StartsWith("COST: ") && !Catch::Contains("num_warps"));
}
