// Tests for cotune/tune/detail/tuning_job.hpp: a crashing, aborting or hanging candidate costs one candidate
// (COTUNE_ISOLATE), crashed candidates are quarantined, and a tuning killed midway resumes from its
// journal. Real kernels, real forks, real processes killed with SIGKILL.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/detail/tuning_journal.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <span>

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

/// Whether a file named `name` exists anywhere under `dir`.
bool file_under(const std::string& dir, const std::string& name) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    if (it->path().filename() == name) return true;
  return false;
}

/// Runs the child in `scenario` on `cache_dir`; SIGKILLs it after `kill_after` outcome lines (0: never),
/// or as soon as a file named `kill_at_file` exists under `cache_dir`. Returns its output and wait status.
std::pair<std::string, int> run_child(const std::string& cache_dir, const char* scenario, int kill_after,
                                      const std::string& kill_at_file = {}) {
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
    if (!kill_at_file.empty()) { // the child may print nothing for a while: look for the file meanwhile
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 2) == 0) {
        if (file_under(cache_dir, kill_at_file)) {
          ::kill(pid, SIGKILL);
          break;
        }
        continue;
      }
    }
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

/// A fork_measurer's job for the tests below: appends the candidate's index to the file named by
/// `context` (in the isolated copy), then never ends for candidate 1, and returns {index, 0.5, 1} for
/// the others.
std::optional<std::vector<double>> logged_measure(const void* context, std::size_t index, const bench_options&) {
  std::FILE* f = std::fopen(static_cast<const std::string*>(context)->c_str(), "a");
  if (f) {
    std::fprintf(f, "%zu\n", index);
    std::fclose(f);
  }
  if (index == 1)
    for (;;) ::pause();
  return std::vector<double>{static_cast<double>(index), 0.5, 1.0};
}

/// How many lines of file `path` are exactly `line`.
int lines_equal(const std::string& path, const std::string& line) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  int n = 0;
  char buf[64];
  while (std::fgets(buf, sizeof buf, f))
    if (std::string(buf) == line + "\n") ++n;
  std::fclose(f);
  return n;
}

} // namespace

TEST_CASE("a wrong guess sent ahead to the isolated copy is kept: one that hangs costs one timeout, not two",
          "[tune][tuning_job][isolation]") {
  private_cache cache;
  const std::string log = (cache.root() / "runs.txt").string();
  auto timeout = knobs().bench.timeout_ms.scoped(300);
  detail::fork_measurer m(&logged_measure, &log);
  const bench_options o{.warmup_ms = 1, .rep_ms = 2};
  CHECK(m.measure(0, o, "k", "{0}", 1).at(0) == 0.0); // candidate 1 is sent ahead
  // A wrong guess: the copy is busy with 1, which never ends; it is killed at the timeout, and its
  // outcome kept.
  CHECK(m.measure(2, o, "k", "{2}", 3).at(0) == 2.0); // candidate 3 is sent ahead
  // 1 is asked for now: its kept outcome, without running it again (and waiting a second timeout).
  CHECK_THROWS_WITH(m.measure(1, o, "k", "{1}"), Catch::Contains("still running"));
  CHECK(lines_equal(log, "1") == 1);
  // 3 was sent ahead with 2 but is not asked for next: 4 is. 3's outcome is kept and returned later.
  CHECK(m.measure(4, o, "k", "{4}").at(0) == 4.0);
  CHECK(m.measure(3, o, "k", "{3}").at(0) == 3.0);
  CHECK(lines_equal(log, "3") == 1);
  // With other options it is another request: measured again.
  const bench_options full{.warmup_ms = 1, .rep_ms = 5};
  CHECK(m.measure(3, full, "k", "{3}").at(0) == 3.0);
  CHECK(lines_equal(log, "3") == 2);
  for (const char* i : {"0", "2", "4"}) CHECK(lines_equal(log, i) == 1);
}

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

TEST_CASE("with no knob set, a segfault, an abort and an endless loop each cost one candidate",
          "[tune][tuning_job][isolation]") {
  private_cache cache;
  REQUIRE(knobs().autotuning.isolate.get() == "on"); // the default: the test runs without COTUNE_ISOLATE
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

namespace {

/// The busy work, and LATE: once the file `arm` exists, 1 dereferences null and 2 loops forever: a
/// candidate healthy through its screening that fails only in the finals (one that fails now and then).
kernel_source late_kernel(const std::string& name, const std::string& arm) {
  static std::string code;
  code = R"(
#include <sys/stat.h>
extern "C" void work(int* out, int n) {
  struct stat st;
  if (LATE != 0 && ::stat(")" +
         arm + R"(", &st) == 0) {
    if (LATE == 1) { volatile int* p = nullptr; *p = 1; }
    volatile int spin = 1;
    while (spin) {}
  }
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";
  return {.name = name, .code = code.c_str(), .entry = "work"};
}

/// Creates `file` once `screened` candidates have been measured: the finals start after that.
struct arm_after_screening final : observer {
  std::string file;
  std::size_t screened;
  std::size_t seen = 0;
  arm_after_screening(std::string f, std::size_t n) : file(std::move(f)), screened(n) {}
  void on_event(const tuning_event& e) override {
    if (std::holds_alternative<candidate_measured>(e) && ++seen == screened) std::fclose(std::fopen(file.c_str(), "w"));
  }
};

} // namespace

TEST_CASE("with no knob set, a finalist that crashes or hangs only in the finals costs itself, not the program",
          "[tune][tuning_job][isolation]") {
  // The finals of a host tuning ran in the program's own process: a finalist that passed its screening
  // in the isolated copy and then crashed there took the program with it (exit 139), and one that hung
  // hung it for ever. They now run in the copy, and when that job does not end, each finalist is
  // measured there on its own.
  private_cache cache;
  cotune_test::temp_dir dir("late");
  const std::string arm = (dir / "armed").string();
  auto timeout = knobs().bench.timeout_ms.scoped(1500);
  // A screening pass, then finals of the four fastest (every candidate within the margin).
  auto screen = knobs().bench.screen_rep_ms.scoped(2.0);
  auto margin = knobs().bench.screen_margin.scoped(10.0);
  const std::vector<config> configs{config{{"COST", 1}, {"LATE", 1}}, config{{"COST", 1}, {"LATE", 0}},
                                    config{{"COST", 1}, {"LATE", 2}}, config{{"COST", 2}, {"LATE", 0}},
                                    config{{"COST", 8}, {"LATE", 0}}};
  auto armer = std::make_shared<arm_after_screening>(arm, configs.size());
  crash_tuner tuner{late_kernel("late_faults", arm), configs,
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .bench = bench_options{.warmup_ms = 1.0, .rep_ms = 20.0},
                     .observers = {armer}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 2000);
  REQUIRE(armer->seen >= configs.size()); // armed: the finals met the faults
  CHECK(r.candidates[0].status == candidate_status::crashed);
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("signal 11") && Catch::Contains("LATE: 1"));
  CHECK(r.candidates[2].status == candidate_status::hung);
  CHECK(r.candidates[1].status == candidate_status::ok);
  CHECK(r.candidates[3].status == candidate_status::ok);
  CHECK(!r.candidates[1].screened_only); // a finalist, measured again after the arming
  CHECK(r.best().at("LATE").as_int() == 0);
  tuner(&out, 2000); // the winner runs in this process, after the arming: it has no fault
  CHECK((out == 2000 * 1999 / 2 || out == 4000 * 3999 / 2));
}

namespace {
std::string exit_marker; // where the exit handler below writes, if it runs
void mark_exit() {
  if (!exit_marker.empty()) std::fclose(std::fopen(exit_marker.c_str(), "w"));
}
} // namespace

TEST_CASE("a candidate that calls exit() costs itself, and the program's exit handlers do not run in the copy",
          "[tune][tuning_job][isolation]") {
  // Its isolated copy once ran the program's atexit handlers and static destructors (their side effects,
  // and a crash in one reported as the candidate's segfault); it now ends at once with the status given.
  private_cache cache;
  cotune_test::temp_dir dir("exit");
  exit_marker = (dir / "exit-handler-ran").string();
  static const bool registered = std::atexit(mark_exit) == 0;
  REQUIRE(registered);
  crash_tuner tuner{crashing_kernel("work_exit"), {candidate(2, 0), candidate(1, 4), candidate(3, 0)},
                    {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 500);
  CHECK(r.candidates[1].status == candidate_status::crashed);
  CHECK_THAT(r.candidates[1].reason, Catch::Contains("exited with status 3") && Catch::Contains("CRASH: 4"));
  CHECK(r.best().at("CRASH").as_int() == 0);
  CHECK_FALSE(std::filesystem::exists(exit_marker));
  exit_marker.clear(); // this program's own exit leaves nothing behind
}

TEST_CASE("crashed candidates are quarantined: later tunings of the kernel skip them", "[tune][tuning_job][isolation]") {
  private_cache cache;
  auto isolate = knobs().autotuning.isolate.scoped("on");
  const std::vector<config> configs{candidate(2, 0), candidate(1, 1), candidate(3, 0)};
  crash_tuner first{crashing_kernel("work_quarantine"), configs,
                    {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true, .bench = quick_bench()}};
  int out = 0;
  const auto& crashed = first.tune_now(&out, 300).candidates[1];
  INFO(crashed.reason);
  REQUIRE(crashed.status == candidate_status::crashed); // else the next tuning would run it in this process
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

TEST_CASE("a tuning killed after its finals resumes them from the journal, measuring nothing again",
          "[tune][tuning_job][journal]") {
  private_cache cache;
  const auto dir = cache.cache_dir().string();
  auto [first, first_status] = run_child(dir, "slow", 0);
  INFO(first);
  REQUIRE(WIFEXITED(first_status));
  REQUIRE(WEXITSTATUS(first_status) == 0);
  // As if killed after the finals, before the result was stored: the result goes, the journal stays.
  int removed = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "child_slow.autotune.json") removed += std::filesystem::remove(e.path()) ? 1 : 0;
  REQUIRE(removed == 1);
  auto [second, second_status] = run_child(dir, "slow", 0);
  INFO(second);
  REQUIRE(WIFEXITED(second_status));
  REQUIRE(WEXITSTATUS(second_status) == 0);
  CHECK(lines_with(second, "resumed=1\n") == 8);
  CHECK(lines_with(second, "resumed=0\n") == 0);
  // The winner and its time to the last bit: the journaled final, not a new measurement.
  const auto best = [](const std::string& out) { return out.substr(out.rfind("best=")); };
  CHECK(best(second) == best(first));
}

TEST_CASE("a tuning killed during its finals resumes the rounds its journal holds and measures only the others",
          "[tune][tuning_job][journal]") {
  private_cache cache;
  const auto dir = cache.cache_dir().string();
  // Killed once round 2 of the finals (in this process: isolation is `auto` and nothing crashed yet)
  // is journaled, so that rounds 1 and 2 at least are.
  auto [killed, killed_status] = run_child(dir, "finals", 0, "child_finals.journal.round.1.json");
  INFO(killed);
  REQUIRE(WIFSIGNALED(killed_status));
  CHECK(lines_with(killed, "measured ") == 8); // the first pass ended: it was killed in the finals
  CHECK_FALSE(file_under(dir, "child_finals.journal.finals.json"));
  // The rerun (isolated now: the journal shows a run that died) takes the first pass and those rounds
  // from the journal and measures the rest of the rounds in its isolated copy.
  auto [out, status] = run_child(dir, "finals", 0);
  INFO(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK(lines_with(out, "resumed=1\n") == 8);
  const int rounds = field(out, "rounds_resumed");
  CHECK(rounds >= 2);
  CHECK(rounds <= static_cast<int>(final_rounds));
  // It journaled the rest: a third run, its result removed, measures nothing again.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "child_finals.autotune.json") std::filesystem::remove(e.path());
  auto [third, third_status] = run_child(dir, "finals", 0);
  INFO(third);
  REQUIRE(WIFEXITED(third_status));
  CHECK(lines_with(third, "resumed=1\n") == 8);
  CHECK(third.substr(third.rfind("best=")) == out.substr(out.rfind("best=")));
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

// ---- search strategies, verification and fair finals in a real tuning (host backend) ----

namespace {

/// Busy work of n * COST steps whose answer is n * COST, plus WRONG: a config with WRONG != 0 is
/// fast when its COST is low, and wrong.
const char* counting_code = R"(
extern "C" void count(int* out, int n) {
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += 1;
  out[0] = s + WRONG;
}
)";

kernel_source counting_kernel(std::string name) { return {.name = std::move(name), .code = counting_code, .entry = "count"}; }

std::vector<config> counting_space() {
  std::vector<config> out;
  for (int cost : {1, 2, 3, 4, 6, 8})
    for (int pad : {0, 1, 2, 3}) out.push_back(config{{"COST", cost}, {"PAD", pad}, {"WRONG", 0}});
  return out;
}

} // namespace

TEST_CASE("a budgeted search measures at most its budget and picks a measured winner", "[tune][tuning_job][search]") {
  private_cache cache;
  for (const auto& name : {"random", "local", "evolution", "bayes"}) {
    INFO(name);
    crash_tuner tuner{counting_kernel(std::string("count_search_") + name), counting_space(),
                      {.arg_names = {"out", "n"},
                       .key = {"n"},
                       .bench = quick_bench(),
                       .search = search_named(name),
                       .search_budget = search_settings{.evaluations = 5, .seed = 3}}};
    int out = 0;
    const auto& r = tuner.tune_now(&out, 2000);
    REQUIRE(r.candidates.size() == 24);
    const auto evaluated = 24 - count_status(r, candidate_status::not_evaluated);
    CHECK(evaluated == 5);
    CHECK(count_status(r, candidate_status::ok) == 5);
    CHECK(r.candidates[r.winner].status == candidate_status::ok);
    for (const auto& c : r.candidates)
      if (c.status == candidate_status::not_evaluated) CHECK_THAT(c.reason, Catch::Contains(name));
    // The stored JSON keeps the status, and reading it back selects the same winner.
    const auto back = tuning_result::from_json(r.json());
    REQUIRE(back);
    CHECK(back->winner == r.winner);
    CHECK(count_status(*back, candidate_status::not_evaluated) == 19);
    tuner(&out, 2000);
    CHECK(out == 2000 * r.best().at("COST").as_int());
  }
}

TEST_CASE("the search knobs choose the strategy and its budget", "[tune][tuning_job][search]") {
  private_cache cache;
  auto strategy = search_knobs().strategy.scoped("random");
  auto budget = search_knobs().budget.scoped("3");
  crash_tuner tuner{counting_kernel("count_search_knobs"), counting_space(),
                    {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 1000);
  CHECK(count_status(r, candidate_status::ok) == 3);
  CHECK(count_status(r, candidate_status::not_evaluated) == 21);
}

TEST_CASE("a search learns from candidates that fail to compile and still picks a measured one", "[tune][tuning_job][search]") {
  private_cache cache;
  // PAD 3 does not compile: `#if` on an undefined macro is fine, an #error is not.
  const kernel_source k{.name = "count_search_errors",
                        .code = std::string("#if PAD == 3\n#error PAD 3 is refused\n#endif\n") + counting_code,
                        .entry = "count"};
  crash_tuner tuner{k, counting_space(),
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .bench = quick_bench(),
                     .search = std::make_shared<bayesian_search>(4),
                     .search_budget = search_settings{.evaluations = 12, .seed = 1}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 1000);
  CHECK(24 - count_status(r, candidate_status::not_evaluated) == 12);
  CHECK(r.candidates[r.winner].status == candidate_status::ok);
  CHECK(r.best().at("PAD").as_int() != 3);
}

TEST_CASE("a candidate that computes a wrong answer is recorded as wrong_result and never wins", "[tune][tuning_job][verify]") {
  private_cache cache;
  // The fastest config (COST 1) answers wrongly; the correct ones are slower.
  std::vector<config> configs{config{{"COST", 4}, {"PAD", 0}, {"WRONG", 0}}, config{{"COST", 1}, {"PAD", 0}, {"WRONG", 1}},
                              config{{"COST", 2}, {"PAD", 0}, {"WRONG", 0}}};
  std::atomic<int> checks{0};
  // In-process: the verify hook's counter lives in this process (an isolated copy counts in its own).
  auto in_process = knobs().autotuning.isolate.scoped("off");
  crash_tuner tuner{counting_kernel("count_verify"), configs,
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .bench = quick_bench(),
                     .verify = [&](const config& c, int* const& out, const int& n) -> std::optional<std::string> {
                       ++checks;
                       const int expected = n * static_cast<int>(c.at("COST").as_int());
                       return compare_outputs(std::span<const int>(&expected, 1), std::span<const int>(out, 1));
                     }}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 3000);
  CHECK(checks.load() == 3);
  CHECK(r.candidates[1].status == candidate_status::wrong_result);
  CHECK_THAT(r.candidates[1].reason, Catch::Contains("element 0: expected 3000, got 3001"));
  CHECK_THAT(r.candidates[1].reason, Catch::Contains("COST: 1"));
  CHECK(r.winner != 1);
  CHECK(r.best().at("WRONG").as_int() == 0);
  // A wrong result survives the stored JSON.
  const auto back = tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK(back->candidates[1].status == candidate_status::wrong_result);
}

TEST_CASE("with verification in isolated processes, a wrong answer keeps its status", "[tune][tuning_job][verify][isolation]") {
  private_cache cache;
  auto isolate = knobs().autotuning.isolate.scoped("on");
  std::vector<config> configs{config{{"COST", 1}, {"PAD", 0}, {"WRONG", 7}}, config{{"COST", 2}, {"PAD", 0}, {"WRONG", 0}}};
  crash_tuner tuner{counting_kernel("count_verify_isolated"), configs,
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .bench = quick_bench(),
                     .verify = [](const config& c, int* const& out, const int& n) -> std::optional<std::string> {
                       const int expected = n * static_cast<int>(c.at("COST").as_int());
                       return compare_outputs(std::span<const int>(&expected, 1), std::span<const int>(out, 1));
                     }}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 1000);
  CHECK(r.candidates[0].status == candidate_status::wrong_result);
  CHECK(r.winner == 1);
}

TEST_CASE("verification sees a candidate that writes nothing: the outputs are poisoned first", "[tune][tuning_job][verify]") {
  private_cache cache;
  // SKIP=1 returns at once and writes nothing: the fastest candidate, and a wrong one.
  const char* code = R"(
extern "C" void fill(int* out, int n) {
  if (SKIP) return;
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += 1;
  for (int i = 0; i < 4; ++i) out[i] = n + i;
}
)";
  using fill_tuner = autotuner<void(std::span<int>, int)>;
  auto verify = [](const config&, const std::span<int>& out, const int& n) -> std::optional<std::string> {
    const std::vector<int> expected{n, n + 1, n + 2, n + 3};
    return compare_outputs(std::span<const int>(expected), std::span<const int>(out.data(), 4));
  };
  const std::vector<config> configs{config{{"COST", 4}, {"SKIP", 0}}, config{{"COST", 1}, {"SKIP", 1}}};
  for (const char* isolate : {"off", "on"}) {
    INFO("COTUNE_ISOLATE=" << isolate);
    auto mode = knobs().autotuning.isolate.scoped(isolate);
    for (const bool poison : {true, false}) {
      INFO("poison_outputs=" << poison);
      fill_tuner tuner{kernel_source{.name = fmt::format("fill_nothing_{}_{}", isolate, poison), .code = code,
                                     .entry = "fill"},
                       configs,
                       {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .verify = verify,
                        .poison_outputs = poison}};
      std::vector<int> out{1000, 1001, 1002, 1003}; // already the right answer for n = 1000
      const auto& r = tuner.tune_now(std::span<int>(out), 1000);
      if (poison) {
        CHECK(r.candidates[1].status == candidate_status::wrong_result);
        CHECK_THAT(r.candidates[1].reason, Catch::Contains("got -1"));
        CHECK(r.winner == 0);
      } else { // what poisoning prevents: the stale right answer passes, and the empty kernel wins
        CHECK(r.candidates[1].status == candidate_status::ok);
        CHECK(r.winner == 1);
      }
    }
  }
}

TEST_CASE("finalists are re-measured in interleaved rounds on one device, each round journaled",
          "[tune][tuning_job][finals]") {
  // In this process (COTUNE_ISOLATE=off) and in the isolated copy, a job per round (the default).
  for (const char* isolate : {"off", "on"}) {
    INFO("COTUNE_ISOLATE=" << isolate);
    private_cache cache;
    auto isolating = knobs().autotuning.isolate.scoped(isolate);
    // Screening with a wide margin sends the best three to the finals.
    crash_tuner tuner{counting_kernel(std::string("count_finals_") + isolate),
                      {config{{"COST", 8}, {"PAD", 0}, {"WRONG", 0}}, config{{"COST", 1}, {"PAD", 0}, {"WRONG", 0}},
                       config{{"COST", 2}, {"PAD", 0}, {"WRONG", 0}}, config{{"COST", 3}, {"PAD", 0}, {"WRONG", 0}},
                       config{{"COST", 16}, {"PAD", 0}, {"WRONG", 0}}},
                      {.arg_names = {"out", "n"},
                       .key = {"n"},
                       .cache_results = true,
                       .bench = bench_options{.warmup_ms = 1, .rep_ms = 10},
                       .measure = std::make_shared<screening_measure>(2.0, 100.0, 3)}};
    int out = 0;
    const auto& r = tuner.tune_now(&out, 20000);
    std::size_t finals = 0;
    for (const auto& c : r.candidates) {
      if (!c.interleaved) continue;
      ++finals;
      CHECK(c.status == candidate_status::ok);
      CHECK_FALSE(c.screened_only);
      CHECK(c.time[1] <= c.time[0]);
      CHECK(c.time[0] <= c.time[2]);
      // Its noise is the finals' (select_best judges it): every round gave samples.
      CHECK(c.samples >= final_rounds);
      CHECK(std::isfinite(c.rsd));
    }
    CHECK(finals == 3);
    CHECK(r.candidates[r.winner].interleaved);
    CHECK(r.best().at("COST").as_int() <= 3); // COST 8 and 16 are many times slower than the finalists
    CHECK(r.final_rounds_resumed == 0);
    // Every round is in the journal, with samples of each of the three finalists.
    for (std::size_t round = 0; round < final_rounds; ++round) {
      INFO("round " << round);
      std::string text;
      for (const auto& e : std::filesystem::recursive_directory_iterator(cache.root()))
        if (e.path().filename() == tuning_journal::round_file(std::string("count_finals_") + isolate, round))
          text = std::string(std::istreambuf_iterator<char>(std::ifstream(e.path()).rdbuf()), {});
      REQUIRE_FALSE(text.empty());
      CHECK(lines_with(text, "\"count\": ") == 3);
      CHECK(lines_with(text, "\"count\": 0,") == 0);
    }
    tuner(&out, 20000);
    CHECK(out == 20000 * r.best().at("COST").as_int());
  }
}

TEST_CASE("each measured candidate records how it was measured, also from an isolated process",
          "[tune][tuning_job][measurement]") {
  for (const char* isolate : {"off", "on"}) {
    INFO("COTUNE_ISOLATE=" << isolate);
    private_cache cache;
    auto isolating = knobs().autotuning.isolate.scoped(isolate);
    crash_tuner tuner{counting_kernel(std::string("count_method_") + isolate),
                      {config{{"COST", 1}, {"PAD", 0}, {"WRONG", 0}}, config{{"COST", 2}, {"PAD", 0}, {"WRONG", 0}}},
                      {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
    int out = 0;
    const auto& r = tuner.tune_now(&out, 1000);
    for (const auto& c : r.candidates) {
      REQUIRE(c.status == candidate_status::ok);
      CHECK(c.method == "host");
      CHECK(c.samples > 0);
      CHECK(c.rsd >= 0.0);
    }
    // The stored result keeps it, and the table shows it.
    auto back = tuning_result::from_json(r.json());
    REQUIRE(back);
    CHECK(back->candidates[0].method == "host");
    CHECK(back->candidates[0].samples == r.candidates[0].samples);
    char* text = nullptr;
    std::size_t size = 0;
    std::FILE* f = ::open_memstream(&text, &size);
    printing_observer::print_table(f, r);
    std::fclose(f);
    const std::string table(text, size);
    std::free(text);
    CHECK_THAT(table, Catch::Contains("method") && Catch::Contains("noise") && Catch::Contains("host"));
  }
}
