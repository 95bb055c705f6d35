// The autotuner over the Redis remote cache: results and binaries shared between real processes
// through a real redis-server on loopback, and one tuning per key across processes.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/redis/redis.hpp>

#include "../support/temp_dir.hpp"
#include "redis_server.hpp"

namespace {

using remote_tuner = cotune::autotuner<void(int*, int), cotune::host_backend,
                                       cotune::host_benchmarker, cotune::redis::remote_cache>;

const char* work_code = R"(
extern "C" void shared_work(int* out, int n) {
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";

/// The child role: this test program re-runs itself with COTUNE_TEST_CHILD=<local cache dir>; a child
/// tunes one key with its own empty local cache and the shared Redis (COTUNE_REDIS_URL), prints what
/// it did, and exits before Catch starts.
struct child_role {
  child_role() {
    const char* local = std::getenv("COTUNE_TEST_CHILD");
    if (!local) return;
    cotune::knobs().cache.dir.set(local);
    std::vector<cotune::config> configs{{{"COST", 6}}, {{"COST", 1}}, {{"COST", 3}}};
    remote_tuner tuner{{.name = "shared_work", .code = work_code, .entry = "shared_work"},
                       configs,
                       {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true,
                        .bench = cotune::bench_options{.warmup_ms = 5, .rep_ms = 50}}};
    int out = 0;
    tuner(&out, 4000);
    const auto& backend = cotune::redis::redis_backend::shared();
    std::printf("measured=%zu cached=%zu compiles=%zu out=%d round_trips=%llu\n", tuner.measured_tunings(),
                tuner.cached_tunings(), tuner.compiles(), out,
                static_cast<unsigned long long>(backend.stats().round_trips));
    std::fflush(stdout);
    // The output is right for whichever config won (the winner is a measurement, which a loaded
    // machine may turn around); that every process got the same winner is checked by the parent.
    auto sum_below = [](long long m) { return static_cast<int>(m * (m - 1) / 2); };
    const bool right = out == sum_below(4000LL * 6) || out == sum_below(4000LL * 1) || out == sum_below(4000LL * 3);
    std::_Exit(right ? 0 : 3);
  }
} const run_as_child_if_asked;

std::vector<std::string> spawn_children(const cotune_test::temp_dir& root, const std::string& url, int count) {
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int i = 0; i < count; ++i) {
    auto dir = root.path() / ("local" + std::to_string(i));
    auto log = root.path() / ("child" + std::to_string(i) + ".log");
    logs.push_back(log.string());
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("COTUNE_TEST_CHILD", dir.c_str(), 1);
      ::setenv("COTUNE_REDIS_URL", url.c_str(), 1);
      std::FILE* f = std::freopen(log.c_str(), "w", stdout);
      (void)f;
      ::execl("/proc/self/exe", "child", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    ::waitpid(pids[i], &status, 0);
    auto text = cotune::detail::read_file(logs[i]).value_or("");
    INFO("child " << i << ": " << text);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    outputs.push_back(text);
  }
  return outputs;
}

} // namespace

TEST_CASE("4 processes tuning one untuned key tune it once through Redis", "[redis][autotuner][processes]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir root("cotune-redis-tuners");
  auto outputs = spawn_children(root, server.url(), 4);
  int measured = 0, cached = 0;
  for (const auto& o : outputs) {
    if (o.find("measured=1 cached=0") != std::string::npos) ++measured;
    if (o.find("measured=0 cached=1") != std::string::npos) ++cached;
  }
  CHECK(measured == 1);
  CHECK(cached == 3);
  // The journal the tuning kept while it measured is gone from Redis with its result stored (a shared
  // store that evicts nothing would keep it for ever); the result and the binaries stay.
  auto raw = server.client();
  CHECK(raw({"KEYS", "*journal*"}).elements.empty());
  CHECK_FALSE(raw({"KEYS", "*shared_work.autotune.json"}).elements.empty());
  // Every process runs the one winner: the tuning's, or the one Redis served.
  std::set<std::string> winners;
  for (const auto& o : outputs)
    if (auto at = o.find("out="); at != std::string::npos) winners.insert(o.substr(at, o.find(' ', at) - at));
  CHECK(winners.size() == 1);
}

TEST_CASE("a new process with an empty local cache is served results and binaries from Redis",
          "[redis][autotuner][processes]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir root("cotune-redis-warm");
  auto first = spawn_children(root, server.url(), 1);
  REQUIRE_THAT(first[0], Catch::Contains("measured=1"));
  cotune_test::temp_dir root2("cotune-redis-warm2"); // another machine: nothing local
  auto second = spawn_children(root2, server.url(), 1);
  // The winner's binary came from Redis: a compile call, but a binary-cache hit (no compiler run is
  // visible here; the host backend would have written a new object otherwise).
  CHECK_THAT(second[0], Catch::Contains("measured=0 cached=1 compiles=1"));
}
