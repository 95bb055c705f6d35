// The autotuner end to end on the CPU: real compiler, real kernels, real files, real processes.
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <span>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

#include <sys/mount.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/process.hpp>

#include "tuning_fixture.hpp"

using namespace cotune;
using cotune_test::cost_configs;
using cotune_test::no_globals_backend;
using cotune_test::private_cache;
using cotune_test::quick_bench;
using cotune_test::work_kernel;

namespace {

using work_tuner = autotuner<void(int*, int)>;

/// Records every event it sees, in order.
struct recording_observer final : observer {
  std::vector<std::string> kinds;
  std::mutex mutex;

protected:
  void on_event(const tuning_event& e) override {
    std::lock_guard lock(mutex);
    kinds.push_back(std::visit(
        [](const auto& ev) -> std::string {
          using E = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<E, tuning_started>) return "started";
          else if constexpr (std::is_same_v<E, candidate_compiled>) return "compiled";
          else if constexpr (std::is_same_v<E, candidate_failed>) return "failed";
          else if constexpr (std::is_same_v<E, candidate_measured>) return "measured";
          else if constexpr (std::is_same_v<E, tuning_selected>) return "selected";
          else if constexpr (std::is_same_v<E, tuning_warning>) return "warning: " + ev.message;
          else return "cache_hit";
        },
        e));
  }
};

} // namespace

TEST_CASE("tuning picks by its own measurements among candidates built to differ and runs its winner",
          "[tune][autotuner]") {
  private_cache cache;
  work_tuner tuner{work_kernel(), cost_configs({16, 4, 1, 8}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 20000);
  REQUIRE(r.candidates.size() == 4);
  for (const auto& c : r.candidates) CHECK(c.status == candidate_status::ok);
  // Which candidate is fastest is a measurement: under a loaded CI run COST=4 once beat COST=1. So the
  // test checks that the tuner chose by its own measurements, and reports an upset without failing.
  CHECK(cotune::select_best(r.candidates) == std::optional<std::size_t>(r.winner));
  if (r.best().at("COST").as_int() != 1)
    WARN("COST=" << r.best().at("COST").as_int() << " was measured faster than COST=1 (a loaded machine)");
  // The tuned call runs its key's winner: the kernel's visible effect is 0 + 1 + ... + (n*COST - 1).
  tuner(&out, 1000);
  const config* best = tuner.best_config(&out, 1000);
  REQUIRE(best);
  const long long m = 1000LL * best->at("COST").as_int();
  CHECK(out == static_cast<int>(m * (m - 1) / 2));
}

TEST_CASE("ties go to the earlier config and every key is tuned once", "[tune][autotuner]") {
  private_cache cache;
  work_tuner tuner{work_kernel(), cost_configs({1, 4}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  tuner(&out, 100);
  tuner(&out, 100);
  tuner(&out, 200);
  CHECK(tuner.measured_tunings() == 2);
  CHECK(tuner.best_config(&out, 100) != nullptr);
  CHECK(tuner.best_config(&out, 300) == nullptr);
}

TEST_CASE("a candidate that does not compile is skipped with its reason", "[tune][autotuner]") {
  private_cache cache;
  kernel_source k = work_kernel("work_broken");
  k.code = "#if COST == 4\n#error candidate four is broken on purpose\n#endif\n" + k.code;
  auto obs = std::make_shared<recording_observer>();
  work_tuner tuner{k, cost_configs({4, 2}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .observers = {obs}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 1000);
  REQUIRE(r.candidates[0].status == candidate_status::compile_error);
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("broken on purpose"));
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("COST: 4"));
  CHECK(std::isinf(r.candidates[0].time[0]));
  CHECK(r.winner == 1);
  CHECK(obs->kinds.front() == "started");
  CHECK(obs->kinds.back() == "selected");
  CHECK(std::count(obs->kinds.begin(), obs->kinds.end(), "failed") == 1);
  CHECK(std::count(obs->kinds.begin(), obs->kinds.end(), "measured") == 1);
}

TEST_CASE("a candidate whose compile crashes the compiler is recorded as compiler_crashed, and tuning goes on",
          "[tune][autotuner][crash]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-cc");
  // A real compiler, except that it dies by SIGSEGV on the candidate with COST=4.
  const auto cc = dir.path() / "flaky-cc";
  std::ofstream(cc) << "#!/bin/sh\ncase \"$*\" in *-DCOST=4*) kill -SEGV $$;; esac\nexec g++ \"$@\"\n";
  std::filesystem::permissions(cc, std::filesystem::perms::owner_all);
  auto cxx = knobs().build.cxx.scoped(std::optional<std::string>(cc.string()));
  work_tuner tuner{work_kernel("work_crashing_cc"), cost_configs({4, 2}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 10);
  REQUIRE(r.candidates[0].status == candidate_status::compiler_crashed);
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("killed by signal 11"));
  CHECK(r.candidates[1].status == candidate_status::ok);
  CHECK(r.winner == 1);
  CHECK(to_string(candidate_status::compiler_crashed) == "compiler crashed");
}

TEST_CASE("when every candidate fails the error lists each one with its reason", "[tune][autotuner]") {
  private_cache cache;
  kernel_source k = work_kernel("work_all_broken");
  k.code = "#error nothing compiles\n" + k.code;
  work_tuner tuner{k, cost_configs({1, 2}), {.arg_names = {"out", "n"}, .bench = quick_bench()}};
  int out = 0;
  try {
    tuner(&out, 10);
    FAIL("expected autotuner_error");
  } catch (const autotuner_error& e) {
    std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("every candidate failed"));
    CHECK_THAT(what, Catch::Contains("COST: 1"));
    CHECK_THAT(what, Catch::Contains("COST: 2"));
    CHECK_THAT(what, Catch::Contains("compile error"));
  }
}

TEST_CASE("hooks run in balanced pairs and the post-hook sees failures", "[tune][autotuner][hooks]") {
  private_cache cache;
  kernel_source k{.name = "maybe_throw",
                  .code = "#include <stdexcept>\nextern \"C\" void maybe_throw(int* x) {\n"
                          "  if (FAIL) throw std::runtime_error(\"launch failed on purpose\");\n  *x += 1;\n}\n",
                  .entry = "maybe_throw"};
  std::atomic<int> pre{0}, post{0}, post_with_error{0};
  // In-process: the hooks count in this process (in an isolated copy, the default, they count in the copy).
  auto in_process = knobs().autotuning.isolate.scoped("off");
  autotuner<void(int*)> tuner{k,
                              {config{{"FAIL", 1}}, config{{"FAIL", 0}}},
                              {.arg_names = {"x"},
                               .pre_hook = [&](int*&) { ++pre; },
                               .post_hook =
                                   [&](std::exception_ptr e, int*&) {
                                     ++post;
                                     if (e) ++post_with_error;
                                   },
                               .bench = quick_bench()}};
  int x = 0;
  const auto& r = tuner.tune_now(&x);
  CHECK(pre.load() == post.load());
  CHECK(pre.load() > 2);
  CHECK(post_with_error.load() >= 1);
  CHECK(r.candidates[0].status == candidate_status::error);
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("launch failed on purpose"));
  CHECK(r.best().at("FAIL").as_int() == 0);
}

TEST_CASE("restore_value leaves an in-place kernel applied exactly once", "[tune][autotuner][hooks]") {
  private_cache cache;
  kernel_source k{.name = "add_one",
                  .code = "extern \"C\" void add_one(float* x, int n) { for (int i = 0; i < n; ++i) x[i] += STEP; }",
                  .entry = "add_one"};
  std::vector<float> data(1000, 5.0f);
  autotuner<void(host_span<float>, int)> tuner{
      k, {config{{"STEP", 1}}.with_launch({.num_warps = 4}), config{{"STEP", 1}}.with_launch({.num_warps = 8})},
      {.arg_names = {"x", "n"}, .key = {"n"}, .restore_value = {"x"}, .bench = quick_bench()}};
  tuner(host_span<float>(data), 1000);
  for (float v : data) REQUIRE(v == 6.0f);
}

TEST_CASE("reset_to_zero zeroes a buffer before each run and before the real launch", "[tune][autotuner][hooks]") {
  private_cache cache;
  kernel_source k{.name = "accumulate",
                  .code = "extern \"C\" void accumulate(int* acc, int n) { for (int i = 0; i < n; ++i) acc[i] += WEIGHT; }",
                  .entry = "accumulate"};
  std::vector<int> acc(64, 123);
  autotuner<void(host_span<int>, int)> tuner{
      k, {config{{"WEIGHT", 3}}, config{{"WEIGHT", 3}}.with_launch({.num_warps = 2})},
      {.arg_names = {"acc", "n"}, .reset_to_zero = {"acc"}, .bench = quick_bench()}};
  tuner(host_span<int>(acc), 64);
  for (int v : acc) REQUIRE(v == 3);
}

TEST_CASE("a config's named pre-hook runs before its runs and sees the arguments", "[tune][autotuner][hooks]") {
  private_cache cache;
  std::atomic<int> calls{0}, wrong_n{0};
  // The hook runs inside every timed run (as in Triton), so it stays cheap (no assertion inside it:
  // under ThreadSanitizer a CHECK per run made the hooked candidate lose), and the other candidate
  // does far more work.
  auto hooked = config{{"COST", 2}}.with_pre_hook("count", [&](const hook_args& a) {
    if (a.arg<int>("n") != 50) ++wrong_n;
    ++calls;
  });
  work_tuner tuner{work_kernel("work_hooked"), {hooked, config{{"COST", 2048}}},
                   {.arg_names = {"out", "n"}, .bench = quick_bench()}};
  int out = 0;
  tuner(&out, 50);
  const int after_tuning = calls.load();
  CHECK(after_tuning > 0);
  CHECK(wrong_n.load() == 0);
  REQUIRE(tuner.best_config(&out, 50)->pre_hook().has_value());
  tuner(&out, 50);
  CHECK(calls.load() == after_tuning + 1);
}

TEST_CASE("8 threads calling one untuned key cause one tuning", "[tune][autotuner][concurrency]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_flight"), cost_configs({1, 2, 3}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  std::vector<std::thread> threads;
  std::vector<int> outs(8, 0);
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        tuner(&outs[t], 500);
      } catch (...) {
        ++errors;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(errors.load() == 0);
  CHECK(tuner.measured_tunings() == 1);
  CHECK(tuner.compiles() == 3);
  // Every caller launched the one winner (which one is a matter of timing, and tests assert none: at
  // ~1 us per run, TSan's overhead on the measuring thread can outweigh a 3x difference in work).
  const auto run_with_cost = [](int cost) { return 500 * cost * (500 * cost - 1) / 2; };
  CHECK((outs[0] == run_with_cost(1) || outs[0] == run_with_cost(2) || outs[0] == run_with_cost(3)));
  for (int v : outs) CHECK(v == outs[0]);
}

TEST_CASE("the async API lets callers overlap tunings and shares one tuning per key", "[tune][autotuner][concurrency]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_async"), cost_configs({1, 2}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  std::vector<std::future<const tuning_result*>> futures;
  for (int i = 0; i < 4; ++i)
    futures.push_back(boost::asio::co_spawn(engine::shared().coordinator(), tuner.tune(&out, i % 2 ? 100 : 200),
                                            boost::asio::use_future));
  std::vector<const tuning_result*> results;
  for (auto& f : futures) results.push_back(f.get());
  CHECK(tuner.measured_tunings() == 2);
  CHECK(results[0] == results[2]);
  CHECK(results[1] == results[3]);
  CHECK(results[0] != results[1]);
}

TEST_CASE("tune_many runs every task to its own outcome and a failing one does not stop the others",
          "[tune][autotuner][concurrency]") {
  private_cache cache;
  work_tuner good{work_kernel("work_many"), cost_configs({1, 2}),
                  {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  kernel_source k = work_kernel("work_many_fails");
  k.code = "#error nothing compiles\n" + k.code;
  work_tuner bad{k, cost_configs({1, 2}), {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  std::vector<tuning_task> jobs;
  jobs.push_back([&] { return good.tune(&out, 100); });
  jobs.push_back([&] { return bad.tune(&out, 100); });
  jobs.push_back([&] { return good.tune(&out, 200); });
  const auto outcomes = tune_many(std::move(jobs));
  REQUIRE(outcomes.size() == 3);
  CHECK(outcomes[0].ok());
  CHECK_FALSE(outcomes[1].ok());
  REQUIRE(outcomes[1].error);
  CHECK_THROWS_WITH(std::rethrow_exception(outcomes[1].error), Catch::Contains("every candidate failed"));
  CHECK(outcomes[2].ok());
  CHECK(outcomes[0].result != outcomes[2].result); // two keys, two results
  CHECK(good.measured_tunings() == 2);
}

TEST_CASE("8 threads calling one key whose candidates all fail each get the error, round after round",
          "[tune][autotuner][concurrency]") {
  // The failure path of single flight: every waiter gets the leader's error, none gets a null entry or
  // a freed flight (this crashed within 20 rounds, and failed every time under ASan, with g++ 12).
  private_cache cache;
  kernel_source k = work_kernel("work_flight_fails");
  k.code = "#error nothing compiles\n" + k.code;
  work_tuner tuner{k, cost_configs({1, 2}), {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> threads;
    std::vector<int> outs(8, 0);
    std::atomic<int> failed{0}, other{0};
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        try {
          tuner(&outs[t], 100 + round); // a new key each round
        } catch (const autotuner_error& e) {
          if (std::string(e.what()).find("every candidate failed") != std::string::npos) ++failed;
          else ++other;
        } catch (...) {
          ++other;
        }
      });
    for (auto& t : threads) t.join();
    CHECK(failed.load() == 8);
    CHECK(other.load() == 0);
    CHECK(tuner.best_config(&outs[0], 100 + round) == nullptr);
  }
  // Each round's callers shared at least one tuning; a failed key is tried again by a later caller.
  CHECK(tuner.compiles() >= 2 * 20);
  CHECK(tuner.compiles() <= 2 * 20 * 8);
}

TEST_CASE("async callers of a failing key all see the error", "[tune][autotuner][concurrency]") {
  private_cache cache;
  kernel_source k = work_kernel("work_async_fails");
  k.code = "#error nothing compiles\n" + k.code;
  work_tuner tuner{k, cost_configs({1, 2}), {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  std::vector<std::future<const tuning_result*>> futures;
  for (int i = 0; i < 6; ++i)
    futures.push_back(boost::asio::co_spawn(engine::shared().coordinator(), tuner.tune(&out, 7), boost::asio::use_future));
  for (auto& f : futures) CHECK_THROWS_AS(f.get(), autotuner_error);
  CHECK(tuner.measured_tunings() == 0);
}

namespace {
/// The host backend under another type, with its own options: a differently parameterised backend
/// (the kind of type that used to get a device thread of its own). With `warns`, it has a warning of
/// its own to give once (as the CUDA backend's lost compile server). One type for both uses: each
/// backend type compiles a whole tuning job again.
struct other_host_backend : cotune::host_backend {
  int tag = 7;
  bool warns = false;
  std::shared_ptr<std::atomic<int>> taken = std::make_shared<std::atomic<int>>(0);
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    const int calls = ++*taken;
    return warns && calls == 1 ? std::vector<std::string>{"the compile server went away (test)"}
                               : std::vector<std::string>{};
  }
};
static_assert(cotune::ReportsWarnings<other_host_backend>);
} // namespace

TEST_CASE("tuners over differently parameterised backends on one device share its thread and never overlap",
          "[tune][autotuner][concurrency][device]") {
  private_cache cache;
  // In-process: the hooks that watch for overlaps count in this process (an isolated copy counts in its own).
  auto in_process = knobs().autotuning.isolate.scoped("off");
  engine eng(2);
  std::atomic<int> active{0}, overlaps{0}, runs{0};
  auto enter = [&](auto&...) {
    if (++active > 1) ++overlaps;
    ++runs;
  };
  auto leave = [&](std::exception_ptr, auto&...) { --active; };
  using other_tuner = autotuner<void(int*, int), other_host_backend>;
  static_assert(!std::is_same_v<work_tuner::backend_type, other_tuner::backend_type>);
  work_tuner a{work_kernel("work_shared_a"), cost_configs({1, 2, 3}),
               {.arg_names = {"out", "n"}, .key = {"n"}, .pre_hook = enter, .post_hook = leave, .bench = quick_bench()},
               {}, eng};
  other_tuner b{work_kernel("work_shared_b"), cost_configs({1, 2, 3}),
                {.arg_names = {"out", "n"}, .key = {"n"}, .pre_hook = enter, .post_hook = leave, .bench = quick_bench()},
                {}, eng};
  std::vector<int> outs(8, 0);
  std::thread ta([&] {
    for (int k = 0; k < 4; ++k) a(&outs[k], 2000 + k);
  });
  std::thread tb([&] {
    for (int k = 0; k < 4; ++k) b(&outs[4 + k], 2000 + k);
  });
  ta.join();
  tb.join();
  CHECK(eng.device_threads() == 1); // one CPU, one device thread, whatever the tuners' types
  CHECK(runs.load() > 0);
  CHECK(overlaps.load() == 0);
  CHECK(a.measured_tunings() == 4);
  CHECK(b.measured_tunings() == 4);
}

TEST_CASE("async_tune takes any completion token: a future, a callback, an awaitable", "[tune][autotuner][async]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_tokens"), cost_configs({1, 2}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  int out = 0;
  std::future<const tuning_result*> f = tuner.async_tune(&out, 300, boost::asio::use_future);
  const tuning_result* by_future = f.get();
  REQUIRE(by_future);

  std::promise<const tuning_result*> called;
  tuner.async_tune(&out, 300, [&](std::exception_ptr e, const tuning_result* r) {
    CHECK_FALSE(e);
    called.set_value(r);
  });
  CHECK(called.get_future().get() == by_future); // served from the table: the same result

  boost::asio::io_context io;
  const tuning_result* by_awaitable = nullptr;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        auto op = tuner.async_tune(&out, 400, boost::asio::use_awaitable);
        by_awaitable = co_await std::move(op);
      },
      boost::asio::detached);
  io.run();
  REQUIRE(by_awaitable);
  CHECK(by_awaitable != by_future); // another key
  CHECK(tuner.measured_tunings() == 2);

  // A failing key reaches each kind of token as its error.
  kernel_source broken = work_kernel("work_tokens_broken");
  broken.code = "#error nothing compiles\n" + broken.code;
  work_tuner failing{broken, cost_configs({1, 2}), {.arg_names = {"out", "n"}, .bench = quick_bench()}};
  CHECK_THROWS_AS(failing.async_tune(&out, 1, boost::asio::use_future).get(), autotuner_error);
  std::promise<bool> failed;
  failing.async_tune(&out, 1, [&](std::exception_ptr e, const tuning_result* r) { failed.set_value(e && !r); });
  CHECK(failed.get_future().get());
}

namespace {
/// A result cache that cannot store (as a full disk would), or with `opens` false, cannot even be
/// opened. (A flag, not a template parameter: each cache type compiles a whole tuning job again.)
struct failing_result_cache : cotune::file_cache {
  static inline bool opens = true;
  explicit failing_result_cache(std::string_view key) : file_cache(key) {
    if (!opens) throw cache_error("the cache directory is on fire (test)");
  }
  std::filesystem::path put(std::string_view, std::string_view) { throw cache_error("no space left on device (test)"); }
};
} // namespace

TEST_CASE("a result cache that fails is a warning event, and the tuning still succeeds", "[tune][autotuner][events]") {
  private_cache cache;
  auto check = [&](bool opens, std::string expected) {
    failing_result_cache::opens = opens;
    auto obs = std::make_shared<recording_observer>();
    autotuner<void(int*, int), host_backend, host_benchmarker, failing_result_cache> tuner{
        work_kernel(opens ? "work_store_fails" : "work_open_fails"), cost_configs({1, 2}),
        {.arg_names = {"out", "n"}, .cache_results = true, .bench = quick_bench(), .observers = {obs}}};
    int out = 0;
    tuner(&out, 100);
    CHECK((out == 100 * 99 / 2 || out == 200 * 199 / 2)); // the winner ran (which one is timing's business)
    CHECK(tuner.measured_tunings() == 1);
    const auto warnings = std::count_if(obs->kinds.begin(), obs->kinds.end(), [&](const std::string& k) {
      return k.rfind("warning: ", 0) == 0 && k.find(expected) != std::string::npos;
    });
    CHECK(warnings == 1);
  };
  check(true, "could not store the tuning result: no space left on device (test)");
  check(false, "the tuning-result cache is unusable (the cache directory is on fire (test))");
  failing_result_cache::opens = true;
}

TEST_CASE("a backend's own warnings reach the observers once, as warning events", "[tune][autotuner][events]") {
  private_cache cache;
  auto obs = std::make_shared<recording_observer>();
  other_host_backend warning;
  warning.warns = true;
  autotuner<void(int*, int), other_host_backend> tuner{
      work_kernel("work_backend_warns"), cost_configs({1, 2}),
      {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .observers = {obs}}, warning};
  int out = 0;
  tuner(&out, 10);
  tuner(&out, 11); // a second tuning: nothing new to say
  CHECK(std::count(obs->kinds.begin(), obs->kinds.end(), "warning: the compile server went away (test)") == 1);
  CHECK(*tuner.backend().taken == 2);
}

TEST_CASE("a cache that cannot store binaries costs one warning, never the tuning", "[tune][autotuner][cache]") {
  cotune_test::temp_dir dir("cotune-blocked");
  auto tune_and_count = [](const std::string& cache_dir, const char* name, std::initializer_list<int> costs) {
    auto scoped_dir = knobs().cache.dir.scoped(cache_dir);
    auto obs = std::make_shared<recording_observer>();
    work_tuner tuner{work_kernel(name), cost_configs(costs),
                     {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .observers = {obs}}};
    int out = 0;
    tuner(&out, 50);
    CHECK(out > 0); // the winner ran
    CHECK(tuner.measured_tunings() == 1);
    std::vector<std::string> warnings;
    for (const auto& k : obs->kinds)
      if (k.rfind("warning: ", 0) == 0) warnings.push_back(k);
    return warnings;
  };
  SECTION("the cache directory cannot be created (a file is in the way: fails for root too)") {
    const auto blocker = dir.path() / "a-file";
    std::ofstream(blocker) << "not a directory";
    const auto warnings = tune_and_count((blocker / "cache").string(), "work_cache_blocked", {1, 2});
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("2 of 2 compiled binaries could not be stored in the cache"));
    CHECK_THAT(warnings[0], Catch::Contains("cannot create directory"));
  }
  SECTION("the cache is on a full file system (a 64 KiB tmpfs: ENOSPC)") {
    const auto small = dir.path() / "small";
    std::filesystem::create_directory(small);
    // mode=0700: a tmpfs root is 1777 by default, and the cache refuses a world-writable directory.
    if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
      WARN("skipped: cannot mount a tmpfs here (" << std::strerror(errno) << ")");
      return;
    }
    struct unmount {
      std::filesystem::path at;
      ~unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } guard{small};
    // Each shared object is ~16 KiB: the first few fit, the rest find the disk full.
    const auto warnings = tune_and_count(small.string(), "work_cache_full", {1, 2, 3, 4, 5, 6, 7, 8});
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("of 8 compiled binaries could not be stored in the cache"));
    CHECK_THAT(warnings[0], Catch::Contains("No space left on device"));
  }
}

TEST_CASE("a result-cache hit in a second process compiles only the winner", "[tune][autotuner][cache]") {
  private_cache cache;
  auto run_child = [&] {
    auto r = detail::run_process({COTUNE_CHILD_TUNER, cache.cache_dir().string(), "3000"}, std::chrono::seconds(120));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
  };
  auto first = run_child();
  CHECK_THAT(first, Catch::Contains("measured=1 cached=0 compiles=4"));
  auto second = run_child();
  CHECK_THAT(second, Catch::Contains("measured=0 cached=1 compiles=1"));
  // The second process serves the first one's winner, whichever that was: which candidate wins a measurement is
  // never asserted (on a loaded machine the cheapest kernel can lose to noise).
  const auto best_of = [](const std::string& out) {
    const auto at = out.find("best=");
    REQUIRE(at != std::string::npos);
    return out.substr(at, out.find('\n', at) - at);
  };
  CHECK(best_of(second) == best_of(first));
  CHECK(best_of(first) != "best=none");
}

TEST_CASE("a corrupt tuning result is a miss and is replaced", "[tune][autotuner][cache]") {
  private_cache cache;
  auto make = [] {
    return std::make_unique<work_tuner>(work_kernel("work_corrupt"), cost_configs({2, 1}),
                                        work_tuner::options{.arg_names = {"out", "n"}, .key = {"n"},
                                                            .cache_results = true, .bench = quick_bench()});
  };
  int out = 0;
  make()->tune_now(&out, 100);
  // Damage every stored result (one byte flipped in the middle), keeping the files in place.
  int damaged = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(cache.cache_dir()))
    if (e.path().filename() == "work_corrupt.autotune.json") {
      auto text = *detail::read_file(e.path());
      text[text.size() / 2] ^= 0x20;
      std::FILE* f = std::fopen(e.path().c_str(), "wb");
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      ++damaged;
    }
  REQUIRE(damaged == 1);
  auto second = make();
  second->tune_now(&out, 100);
  CHECK(second->measured_tunings() == 1);
  auto third = make();
  third->tune_now(&out, 100);
  CHECK(third->cached_tunings() == 1);
}

TEST_CASE("pruning: early_config_prune sees configs and arguments, an empty result is an error",
          "[tune][autotuner][prune]") {
  private_cache cache;
  std::size_t seen = 0;
  int seen_n = 0;
  work_tuner tuner{work_kernel("work_prune"), cost_configs({1, 2, 3, 4}),
                   {.arg_names = {"out", "n"},
                    .key = {"n"},
                    .early_config_prune =
                        [&](const std::vector<config>& cs, int* const&, const int& n) {
                          seen = cs.size();
                          seen_n = n;
                          std::vector<config> kept;
                          if (n > 0)
                            for (const auto& c : cs)
                              if (c.at("COST").as_int() % 2 == 0) kept.push_back(c);
                          return kept;
                        },
                    .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 10);
  CHECK(seen == 4);
  CHECK(seen_n == 10);
  CHECK(r.candidates.size() == 2);
  CHECK_THROWS_WITH(tuner(&out, -1), Catch::Contains("no configs left after early_config_prune"));
}

TEST_CASE("pruning: perf_model with top_k keeps the best predicted, a fraction never rounds to 0",
          "[tune][autotuner][prune]") {
  private_cache cache;
  auto model = [](const config& c, int* const&, const int&) { return double(c.at("COST").as_int()); };
  SECTION("an integer top_k") {
    work_tuner tuner{work_kernel("work_topk"), cost_configs({5, 3, 4, 1}),
                     {.arg_names = {"out", "n"}, .perf_model = model, .top_k = std::int64_t{2}, .bench = quick_bench()}};
    int out = 0;
    const auto& r = tuner.tune_now(&out, 10);
    REQUIRE(r.candidates.size() == 2);
    CHECK(r.candidates[0].cfg.at("COST").as_int() == 1);
    CHECK(r.candidates[1].cfg.at("COST").as_int() == 3);
  }
  SECTION("a fraction of the early-pruned list, at least one") {
    work_tuner tuner{work_kernel("work_topf"), cost_configs({5, 3, 4, 1}),
                     {.arg_names = {"out", "n"},
                      .early_config_prune = [](const std::vector<config>& cs, int* const&,
                                               const int&) { return std::vector<config>(cs.begin(), cs.begin() + 3); },
                      .perf_model = model,
                      .top_k = 0.1,
                      .bench = quick_bench()}};
    int out = 0;
    const auto& r = tuner.tune_now(&out, 10);
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].cfg.at("COST").as_int() == 3);
  }
  SECTION("a bad top_k is a clear error") {
    work_tuner tuner{work_kernel("work_topbad"), cost_configs({5, 3}),
                     {.arg_names = {"out", "n"}, .perf_model = model, .top_k = 1.5, .bench = quick_bench()}};
    int out = 0;
    CHECK_THROWS_WITH(tuner(&out, 10), Catch::Contains("top_k"));
  }
}

TEST_CASE("key semantics: selected values, buffer element types and extents, heuristics", "[tune][autotuner][key]") {
  private_cache cache;
  kernel_source k{.name = "fill",
                  .code = "extern \"C\" void fill(float* x, int n, int unused) { (void)unused; for (int i = 0; i < n; ++i) "
                          "x[i] = VALUE + EVEN; }",
                  .entry = "fill"};
  using fill_tuner = autotuner<void(host_span<float>, int, int)>;
  fill_tuner tuner{k,
                   {config{{"VALUE", 1}}, config{{"VALUE", 1}}.with_launch({.num_warps = 8})},
                   {.arg_names = {"x", "n", "unused"},
                    .key = {"x"},
                    .heuristics = {{"EVEN", [](const host_span<float>&, const int& n, const int&) { return value(n % 2 == 0 ? 1 : 0); }}},
                    .bench = quick_bench()}};
  std::vector<float> a(10), b(20);
  tuner(host_span<float>(a), 10, 7);
  CHECK(a[0] == 2.0f); // VALUE + EVEN(10)
  tuner(host_span<float>(a), 10, 8); // 'unused' is not in the key
  CHECK(tuner.measured_tunings() == 1);
  tuner(host_span<float>(b), 20, 7); // another extent
  CHECK(tuner.measured_tunings() == 2);
  tuner(host_span<float>(a), 9, 7); // same extent, another heuristic value
  CHECK(tuner.measured_tunings() == 3);
  CHECK(a[0] == 1.0f);
  CHECK(tuner.key_text(host_span<float>(a), 10, 0) == "x: float32[10], EVEN=1");

  CHECK_THROWS_WITH((fill_tuner{k, {config{{"VALUE", 1}}}, {.arg_names = {"x", "n", "unused"}, .key = {"m"}}}),
                    Catch::Contains("'m', which is not an argument"));
  CHECK_THROWS_WITH((fill_tuner{k, {config{{"VALUE", 1}}}, {.arg_names = {"x", "n"}}}),
                    Catch::Contains("2 argument names given, but the kernel takes 3"));
  CHECK_THROWS_WITH((fill_tuner{k, {config{{"VALUE", 1}}}, {.arg_names = {"x", "n", "unused"}, .reset_to_zero = {"n"}}}),
                    Catch::Contains("cannot be used in reset_to_zero"));
}

TEST_CASE("a heuristic that redefines a tuned parameter is an error", "[tune][autotuner][key]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_conflict"), cost_configs({1, 2}),
                   {.arg_names = {"out", "n"}, .heuristics = {{"COST", [](int* const&, const int&) { return value(1); }}},
                    .bench = quick_bench()}};
  int out = 0;
  CHECK_THROWS_WITH(tuner(&out, 1), Catch::Contains("conflicting meta-parameters"));
}

TEST_CASE("warmup compiles every candidate and measures nothing", "[tune][autotuner]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_warm"), cost_configs({1, 2, 3}), {.arg_names = {"out", "n"}}};
  int out = 0;
  auto results = tuner.warmup(&out, 1);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.status == candidate_status::ok);
  CHECK(tuner.measured_tunings() == 0);
  auto again = tuner.warmup(&out, 1);
  for (const auto& r : again) CHECK(r.binary_from_cache);
}

TEST_CASE("a compile past its deadline is cancelled and recorded as a timeout", "[tune][autotuner][timeout]") {
  private_cache cache;
  auto deadline = knobs().autotuning.compile_timeout_ms.scoped(4000);
  kernel_source k = work_kernel("work_slow");
  // SLOW makes the compiler evaluate ~10^9 constexpr steps: far past the deadline.
  k.code = R"(
#if SLOW
constexpr long spin(int seed) { long s = 0; for (int i = 0; i < 250000; ++i) s += (i ^ seed) % 7; return s; }
template <int... I> constexpr long spin_all(int) { return (spin(I) + ...); }
template <int N, int... I> struct seq : seq<N - 1, N - 1, I...> {};
template <int... I> struct seq<0, I...> { static constexpr long value = spin_all<I...>(0); };
static_assert(seq<4000>::value > 0);
#endif
)" + k.code;
  k.options = {"-fconstexpr-ops-limit=100000000000", "-ftemplate-depth=5000"};
  work_tuner tuner{k,
                   {config{{"COST", 1}, {"SLOW", 1}}, config{{"COST", 2}, {"SLOW", 0}}},
                   {.arg_names = {"out", "n"}, .bench = quick_bench()}};
  int out = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto& r = tuner.tune_now(&out, 10);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
  CHECK(r.candidates[0].status == candidate_status::timeout);
  CHECK_THAT(r.candidates[0].reason, Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS"));
  CHECK(r.winner == 1);
}

TEST_CASE("one config is launched without measuring", "[tune][autotuner]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_single"), cost_configs({1}), {.arg_names = {"out", "n"}}};
  int out = 0;
  tuner(&out, 10);
  CHECK(out == 45);
  CHECK(tuner.measured_tunings() == 1);
}

TEST_CASE("screening measures every candidate briefly and only the close ones fully", "[tune][autotuner][screening]") {
  private_cache cache;
  auto rep = knobs().bench.screen_rep_ms.scoped(2.0);
  auto margin = knobs().bench.screen_margin.scoped(0.15);
  // COST 8 and 32 lose to COST 1 by far more than the margin (and far more than any timing noise).
  work_tuner tuner{work_kernel("work_screen"), cost_configs({8, 1, 32}),
                   {.arg_names = {"out", "n"}, .bench = bench_options{.warmup_ms = 2, .rep_ms = 20}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 20000);
  CHECK(r.best().at("COST").as_int() == 1);
  CHECK(r.candidates[0].screened_only);
  CHECK(r.candidates[2].screened_only);
  CHECK_FALSE(r.candidates[1].screened_only); // the finalist got the full budget
  for (const auto& c : r.candidates) CHECK(c.status == candidate_status::ok);
  // The flag survives the JSON round trip of the result cache.
  auto back = tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK(back->candidates[0].screened_only);
  CHECK_FALSE(back->candidates[1].screened_only);
}

TEST_CASE("an exhaustive measure strategy measures every candidate once with the full budget",
          "[tune][autotuner][screening]") {
  private_cache cache;
  auto obs = std::make_shared<recording_observer>();
  work_tuner tuner{work_kernel("work_exhaustive"), cost_configs({1, 8, 2, 16}),
                   {.arg_names = {"out", "n"},
                    .bench = bench_options{.warmup_ms = 1.0, .rep_ms = 40.0},
                    .observers = {obs},
                    .measure = std::make_shared<exhaustive_measure>()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 200);
  CHECK(std::count(obs->kinds.begin(), obs->kinds.end(), "measured") == 4);
  for (const auto& c : r.candidates) {
    CHECK(c.status == candidate_status::ok);
    CHECK_FALSE(c.screened_only);
  }
}

TEST_CASE("screening is off when the budgets are already short", "[tune][autotuner][screening]") {
  private_cache cache;
  work_tuner tuner{work_kernel("work_noscreen"), cost_configs({8, 1, 32}),
                   {.arg_names = {"out", "n"}, .bench = quick_bench()}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 2000);
  for (const auto& c : r.candidates) CHECK_FALSE(c.screened_only);
}

TEST_CASE("a host kernel takes std::span buffers, filled from a std::vector or std::array", "[tune][autotuner][buffers]") {
  private_cache cache;
  kernel_source k{.name = "axpy_ranges",
                  .code = "extern \"C\" void axpy_ranges(const float* x, float* y, int* count, int n) {\n"
                          "  for (int i = 0; i < n; ++i) y[i] += SCALE * x[i];\n"
                          "  count[0] += 1;\n"
                          "}",
                  .entry = "axpy_ranges"};
  using ranges_tuner = autotuner<void(std::span<const float>, std::span<float>, std::span<int, 1>, int)>;
  std::vector<float> x(32, 1.0f), y(32, 5.0f);
  std::array<int, 1> count{7};
  ranges_tuner tuner{k,
                     {config{{"SCALE", 2}}, config{{"SCALE", 2}}.with_launch({.num_warps = 8})},
                     {.arg_names = {"x", "y", "count", "n"},
                      .key = {"x"},
                      .reset_to_zero = {"count"},
                      .restore_value = {"y"},
                      .bench = quick_bench()}};
  tuner(x, y, count, 32); // std::vector and std::array convert to the std::span parameters
  // y was restored after every benchmark run, so the real launch added 2 x 1 once; count was zeroed
  // before the real launch, which then counted itself.
  for (float v : y) REQUIRE(v == 7.0f);
  CHECK(count[0] == 1);
  CHECK(tuner.key_text(x, y, count, 32) == "x: float32[32], y: float32, count: int32");
  CHECK(tuner.measured_tunings() == 1);
  tuner(std::span<const float>(x).first(16), y, count, 16); // another extent of x: another key
  CHECK(tuner.measured_tunings() == 2);
  CHECK(y[0] == 9.0f);
  CHECK(y[16] == 7.0f);
}

TEST_CASE("a read-only buffer named in reset_to_zero or restore_value is refused at construction",
          "[tune][autotuner][buffers]") {
  kernel_source k{.name = "ro", .code = "extern \"C\" void ro(const float*, float*) {}", .entry = "ro"};
  using ro_tuner = autotuner<void(std::span<const float>, host_span<float>)>;
  CHECK_THROWS_WITH((ro_tuner{k, {config{}}, {.arg_names = {"x", "y"}, .reset_to_zero = {"x"}}}),
                    Catch::Contains("argument 'x' cannot be used in reset_to_zero: its elements are const"));
  CHECK_THROWS_WITH((ro_tuner{k, {config{}}, {.arg_names = {"x", "y"}, .restore_value = {"x"}}}),
                    Catch::Contains("cannot be used in restore_value: its elements are const"));
  CHECK_NOTHROW((ro_tuner{k, {config{}}, {.arg_names = {"x", "y"}, .reset_to_zero = {"y"}, .restore_value = {"y"}}}));
}

// ---- module set-up: on_load --------------------------------------------------------------------------

namespace {

/// out[i] = scale * (i + 1), repeated COST times; `scale` is a global that only on_load sets (0 without it).
const kernel_source scaled_kernel{.name = "scaled",
                                  .code = "int scale;\n"
                                          "extern \"C\" void scaled(int* out, int n) {\n"
                                          "  for (int r = 0; r < COST; ++r)\n"
                                          "    for (int i = 0; i < n; ++i) out[i] = scale * (i + 1);\n"
                                          "}",
                                  .entry = "scaled"};

using scaled_tuner = autotuner<void(host_span<int>, int)>;

struct load_log {
  std::atomic<int> calls{0};
  std::atomic<int> wrong_args{0};
};

scaled_tuner::options scaled_options(load_log& log, const char* global = "scale") {
  return {.arg_names = {"out", "n"},
          .key = {"n"},
          .on_load =
              [&log, global](const module_view& m, const host_span<int>& out, const int& n) {
                ++log.calls;
                if (out.size() != std::size_t(n) || !m.cfg().contains("COST") || m.device_index() != 0) ++log.wrong_args;
                m.global<int>(global).copy_from(std::array<int, 1>{7});
              },
          .cache_results = true,
          .bench = quick_bench(),
          // A candidate whose module was not set up computes zeros: it would be rejected.
          .verify = [](const config&, const host_span<int>& out, const int& n) -> std::optional<std::string> {
            for (int i = 0; i < n; ++i)
              if (out.data()[i] != 7 * (i + 1))
                return fmt::format("out[{}] = {}, expected {}", i, out.data()[i], 7 * (i + 1));
            return std::nullopt;
          }};
}

bool scaled_right(const std::vector<int>& out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != 7 * int(i + 1)) return false;
  return true;
}

static_assert(FindsModuleGlobals<host_backend>);

} // namespace

TEST_CASE("on_load sets a module global before each candidate runs, and for the winner after a warm start",
          "[tune][autotuner][module]") {
  private_cache cache;
  const int n = 64;
  std::vector<int> out(n, -1);
  // In-process: on_load runs in this process for every candidate (in an isolated copy, the default, it
  // runs in the copy, and here only for the finalists and the winner).
  auto in_process = knobs().autotuning.isolate.scoped("off");
  {
    load_log log;
    scaled_tuner tuner{scaled_kernel, cost_configs({8, 1, 4}), scaled_options(log)};
    tuner(out, n);
    const auto& result = tuner.tune_now(out, n);
    for (const auto& c : result.candidates) {
      INFO(c.cfg.text() << ": " << c.reason);
      CHECK(c.status == candidate_status::ok); // verify saw every candidate's set-up global
    }
    CHECK(log.calls >= 3); // once per loaded candidate (the finals may load none again)
    CHECK(log.wrong_args == 0);
    CHECK(scaled_right(out));
    const int after_tuning = log.calls;
    std::fill(out.begin(), out.end(), -1);
    tuner(out, n); // the tuned call: no load, no hook
    CHECK(log.calls == after_tuning);
    CHECK(scaled_right(out));
  } // the first tuner's libraries are closed: a second load starts from a zeroed global

  load_log log;
  scaled_tuner warm{scaled_kernel, cost_configs({8, 1, 4}), scaled_options(log)};
  std::fill(out.begin(), out.end(), -1);
  warm(out, n);
  CHECK(warm.cached_tunings() == 1);
  CHECK(warm.measured_tunings() == 0);
  CHECK(log.calls == 1); // the winner alone is loaded, and set up
  CHECK(scaled_right(out));
}

TEST_CASE("an on_load that names a missing global fails each candidate with the fix", "[tune][autotuner][module]") {
  private_cache cache;
  load_log log;
  std::vector<int> out(8);
  scaled_tuner tuner{scaled_kernel, cost_configs({2, 1}), scaled_options(log, "no_such_global")};
  CHECK_THROWS_WITH(tuner(out, 8), Catch::Contains("every candidate failed") &&
                                       Catch::Contains("no global variable 'no_such_global'") &&
                                       Catch::Contains("on_load for kernel 'scaled'"));
}

TEST_CASE("on_load over a backend that cannot find module globals is refused at construction",
          "[tune][autotuner][module]") {
  using plain_tuner = autotuner<void(host_span<int>, int), no_globals_backend>;
  load_log log;
  CHECK_THROWS_WITH((plain_tuner{scaled_kernel, cost_configs({1}), scaled_options(log)}),
                    Catch::Contains("on_load is set, but this backend cannot find a loaded module's globals") &&
                        Catch::Contains("FindsModuleGlobals"));
  auto without = scaled_options(log);
  without.on_load = nullptr;
  CHECK_NOTHROW((plain_tuner{scaled_kernel, cost_configs({1}), std::move(without)}));
}
