// Issue 13 item 2: four `cotune tune` processes, each with its own local cache, share one 64-key job
// through one real redis-server on loopback. Each key is measured exactly once (the job's ledger in
// Redis counts measurements), every process ends with every result, and a process killed with
// SIGKILL midway leaves nothing undone: its keys are taken over once its leases expire.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/detail/files.hpp>

#include "../support/temp_dir.hpp"
#include "../support/tool_path.hpp"
#include "redis_server.hpp"

namespace fs = std::filesystem;

namespace {

using cotune_test::tool_path;

/// `cotune tune JOB --jsonl` in its own process, stdout to `out`, stderr to `err`.
pid_t start_tool(const fs::path& job, const fs::path& out, const fs::path& err, const std::vector<std::string>& env) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    const std::string tool = tool_path(), job_path = job.string();
    ::execl(tool.c_str(), tool.c_str(), "tune", job_path.c_str(), "--jsonl", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string read(const fs::path& p) { return cotune::detail::read_file(p).value_or(""); }

/// The job's ledger under `prefix` (the hash `cotune tune --redis` counts measurements in): how many keys
/// it lists, and how many of them were counted exactly once.
std::pair<long long, std::size_t> ledger_of(const cotune_test::redis_server& server, const std::string& prefix) {
  auto redis = server.client();
  auto keys = redis({"KEYS", prefix + ":job:*:measured"});
  REQUIRE(keys.elements.size() == 1);
  const std::string ledger = keys.elements[0].str;
  std::size_t once = 0;
  for (const auto& c : redis({"HVALS", ledger}).elements) once += c.str == "1";
  return {redis({"HLEN", ledger}).integer, once};
}

} // namespace

TEST_CASE("four processes share a 64-key job through Redis: each key measured once, even when one is killed",
          "[redis][job][fleet][processes]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir dir{"cotune-fleet"};
  // 64 keys (n = 1..64), two candidates each, a cheap kernel and small budgets: the processes spend
  // their time on tuning keys, long enough for a kill to land midway.
  std::string instances;
  for (int n = 1; n <= 64; ++n) instances += fmt::format("{}{}", n > 1 ? ", " : "", n);
  const fs::path job = dir / "fleet.job.json";
  std::ofstream(job) << fmt::format(R"({{
  "name": "fleet", "bench": {{"warmup_ms": 1, "rep_ms": 8}},
  "kernels": [{{
    "name": "fill",
    "code": "extern \"C\" void fill(float* y, int n) {{ for (int i = 0; i < 4096; ++i) y[i] = float(i * SCALE + n); }}",
    "space": {{"axes": {{"SCALE": [1, 2]}}}},
    "arguments": [{{"name": "y", "buffer": "float32", "extent": 4096}}, {{"name": "n", "scalar": "int32", "value": "n"}}],
    "key": ["n"],
    "instances": {{"n": [{}]}}
  }}]
}}
)",
                                    instances);
  const int processes = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < processes; ++i) {
    const std::vector<std::string> env{"COTUNE_REDIS_URL=" + server.url(), "COTUNE_REDIS_PREFIX=fleet",
                                       // 1.5 s leases: a dead process's keys are taken over within seconds.
                                       "COTUNE_REDIS_LEASE_MS=1500", "COTUNE_BENCH_SCREEN_REP_MS=0",
                                       "COTUNE_CACHE_DIR=" + (dir / fmt::format("cache{}", i)).string()};
    pids.push_back(start_tool(job, dir / fmt::format("out{}.jsonl", i), dir / fmt::format("err{}.txt", i), env));
  }
  // Kill process 0 once it has finished a few keys (it is then midway: holding a key, or about to).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_of(read(dir / "out0.jsonl"), "\"event\": \"key\"") < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::size_t done_before_kill = count_of(read(dir / "out0.jsonl"), "\"event\": \"key\"");
  ::kill(pids[0], SIGKILL);
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    REQUIRE(::waitpid(pids[i], &status, 0) == pids[i]);
    if (i == 0) {
      CHECK(WIFSIGNALED(status));
    } else {
      INFO("stderr: " << read(dir / fmt::format("err{}.txt", i)));
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
  }
  INFO("process 0 finished " << done_before_kill << " keys before SIGKILL");
  CHECK(done_before_kill < 64);

  // Every surviving process reports every key, and the same winners.
  std::size_t measured = 0;
  for (int i = 1; i < processes; ++i) {
    const auto out = read(dir / fmt::format("out{}.jsonl", i));
    INFO("process " << i << ":\n" << out);
    CHECK(count_of(out, "\"event\": \"key\"") == 64);
    CHECK(count_of(out, "\"outcome\": \"failed\"") == 0);
    measured += count_of(out, "\"outcome\": \"measured\"");
  }
  measured += count_of(read(dir / "out0.jsonl"), "\"outcome\": \"measured\"");
  CHECK(measured <= 64); // the ledger below is the exact count

  // The ledger: 64 keys, each measured exactly once by anyone (the killed process included).
  const auto [listed, once] = ledger_of(server, "fleet");
  CHECK(listed == 64);
  CHECK(once == 64);
}

TEST_CASE("a process paused past its lease is fenced off: the key another took over is stored and counted once",
          "[redis][job][fleet][processes]") {
  // A holder stopped (a suspended VM, SIGSTOP under a batch scheduler) past its lease: the other process
  // takes its key over, measures and stores it; when the first wakes up and finishes the same key, its
  // result is refused in Redis (it keeps it in its own cache), so the ledger counts the key once.
  cotune_test::redis_server server;
  cotune_test::temp_dir dir{"cotune-fleet"};
  const fs::path job = dir / "paused.job.json";
  std::ofstream(job) << R"({
  "name": "paused", "bench": {"warmup_ms": 1, "rep_ms": 100},
  "kernels": [{
    "name": "fill",
    "code": "#include <unistd.h>\nextern \"C\" void fill(float* y, int n) { usleep(10000 * SCALE); y[0] = float(n); }",
    "space": {"axes": {"SCALE": [1, 2]}},
    "arguments": [{"name": "y", "buffer": "float32", "extent": 4096}, {"name": "n", "scalar": "int32", "value": "n"}],
    "key": ["n"],
    "instances": {"n": [1, 2, 3, 4, 5, 6, 7, 8]}
  }]
}
)";
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    const std::vector<std::string> env{"COTUNE_REDIS_URL=" + server.url(), "COTUNE_REDIS_PREFIX=paused",
                                       "COTUNE_REDIS_LEASE_MS=1500",
                                       "COTUNE_CACHE_DIR=" + (dir / fmt::format("cache{}", i)).string()};
    pids.push_back(start_tool(job, dir / fmt::format("out{}.jsonl", i), dir / fmt::format("err{}.txt", i), env));
  }
  // Stop process 0 a little after it has finished a key: it is then measuring its next one (a key takes
  // about half a second here: the kernel sleeps 10 or 20 ms a call), holding its lease.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_of(read(dir / "out0.jsonl"), "\"event\": \"key\"") < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(::kill(pids[0], SIGSTOP) == 0);
  const std::size_t done_before_stop = count_of(read(dir / "out0.jsonl"), "\"event\": \"key\"");
  std::this_thread::sleep_for(std::chrono::seconds(5)); // past the 1.5 s lease: process 1 takes the key over
  REQUIRE(::kill(pids[0], SIGCONT) == 0);
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    REQUIRE(::waitpid(pids[i], &status, 0) == pids[i]);
    INFO("process " << i << " stderr: " << read(dir / fmt::format("err{}.txt", i)));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  INFO("process 0 finished " << done_before_stop << " keys before SIGSTOP");
  CHECK(done_before_stop < 8);
  for (int i = 0; i < 2; ++i) {
    const auto out = read(dir / fmt::format("out{}.jsonl", i));
    INFO("process " << i << ":\n" << out);
    CHECK(count_of(out, "\"event\": \"key\"") == 8);
    CHECK(count_of(out, "\"outcome\": \"failed\"") == 0);
  }
  // The ledger: each key stored and counted once, the paused process's late result included in none.
  const auto [listed, once] = ledger_of(server, "paused");
  CHECK(listed == 8);
  CHECK(once == 8);
}
