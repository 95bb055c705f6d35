// Tests for cotune/redis/job_ledger.hpp against a real redis-server: a tuning result and its count in
// the job's ledger are one transaction, and a process killed between sending them and EXEC (this test
// program forked, stopped there by the backend's hook) leaves neither.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/cache/remote_cache.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/redis/job_ledger.hpp>
#include <cotune/redis/redis_backend.hpp>
#include <cotune/redis/redis_lease.hpp>
#include <cotune/redis/tuning_coordination.hpp>

#include "../support/temp_dir.hpp"
#include "redis_server.hpp"

using cotune::redis::redis_backend;

namespace {

const std::string key = cotune::detail::sha256_hex("ledger test key");
const std::string ledger = "test:job:0123456789abcdef:measured";
const std::string result_json = R"({"kernel": "fill", "key": "n=7", "candidates": []})";

/// The remote cache `cotune tune --redis` stores results through, over `backend` (its local cache is
/// the knobs' cache directory).
cotune::basic_remote_cache<redis_backend> cache_over(redis_backend& backend) {
  return cotune::basic_remote_cache<redis_backend>(key, backend);
}

} // namespace

TEST_CASE("a tuning result's ledger field is its kernel and key; other entries have none", "[redis][job_ledger]") {
  using cotune::redis::ledger_field;
  CHECK(ledger_field("fill.autotune.json", result_json) == std::optional<std::string>("fill|n=7"));
  CHECK_FALSE(ledger_field("fill.so", result_json));
  CHECK_FALSE(ledger_field("__companion__fill.autotune.json", result_json));
  CHECK_FALSE(ledger_field("other.autotune.json", result_json)); // filed under another kernel's name
  CHECK_FALSE(ledger_field("fill.autotune.json", "not json"));
  CHECK_FALSE(ledger_field("fill.autotune.json", R"({"kernel": "fill"})"));
}

TEST_CASE("a tuning result and its count in the job's ledger are stored in one transaction",
          "[redis][job_ledger]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir local;
  auto dir = cotune::knobs().cache.dir.scoped(local.path().string());
  redis_backend backend(server.options());
  cotune::redis::count_results_in(backend, ledger);
  auto cache = cache_over(backend);
  backend.reset_stats();
  cache.put(result_json, "fill.autotune.json");
  auto raw = server.client();
  CHECK(raw({"EXISTS", backend.remote_key_of(key, "fill.autotune.json")}).integer == 1);
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
  CHECK(backend.stats().round_trips == 1); // MULTI, SET, HINCRBY, EXEC sent together
  CHECK(backend.stats().writes == 1);
  cache.put("binary", "fill.so"); // not a result: not counted, and a plain SET
  CHECK(raw({"HLEN", ledger}).integer == 1);
  cache.put(result_json, "fill.autotune.json"); // measured again: counted again
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "2");
  CHECK(cache.get("fill.autotune.json") == result_json);
}

TEST_CASE("a process killed after sending a result and its count, before EXEC, leaves neither in Redis",
          "[redis][job_ledger][processes]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir local;
  auto dir = cotune::knobs().cache.dir.scoped(local.path().string());
  int stopped[2], go[2];
  REQUIRE(::pipe(stopped) == 0);
  REQUIRE(::pipe(go) == 0);
  // A child that stops at the hook and goes on when a byte arrives on `go` (unless it is killed there).
  auto start = [&] {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid != 0) return pid;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    static int stopped_fd, go_fd;
    stopped_fd = stopped[1];
    go_fd = go[0];
    cotune::redis::detail::transaction_midway_hook = [] {
      char byte = 's';
      if (::write(stopped_fd, &byte, 1) != 1 || ::read(go_fd, &byte, 1) != 1) ::_exit(4);
    };
    redis_backend backend(server.options());
    cotune::redis::count_results_in(backend, ledger);
    auto cache = cache_over(backend);
    cache.put(result_json, "fill.autotune.json");
    ::_exit(backend.stats().writes == 1 ? 0 : 5);
  };
  auto raw = server.client();
  const std::string result_key = redis_backend(server.options()).remote_key_of(key, "fill.autotune.json");

  // Killed at the hook: the server holds the queued SET and HINCRBY, and applies neither.
  const pid_t doomed = start();
  char byte = 0;
  REQUIRE(::read(stopped[0], &byte, 1) == 1);
  CHECK(raw({"EXISTS", result_key}).integer == 0); // queued, not applied
  ::kill(doomed, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(doomed, &status, 0) == doomed);
  CHECK(WIFSIGNALED(status));
  CHECK(raw({"EXISTS", result_key}).integer == 0);
  CHECK(raw({"HEXISTS", ledger, "fill|n=7"}).integer == 0);

  // The control: the same put let through stores both.
  const pid_t survivor = start();
  REQUIRE(::read(stopped[0], &byte, 1) == 1);
  CHECK(raw({"EXISTS", result_key}).integer == 0);
  REQUIRE(::write(go[1], "g", 1) == 1);
  REQUIRE(::waitpid(survivor, &status, 0) == survivor);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(raw({"EXISTS", result_key}).integer == 1);
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
  for (int fd : {stopped[0], stopped[1], go[0], go[1]}) ::close(fd);
}

TEST_CASE("a holder paused past its lease is fenced off: its late result neither replaces the new holder's nor counts "
          "again",
          "[redis][job_ledger][lease]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir local;
  auto dir = cotune::knobs().cache.dir.scoped(local.path().string());
  // Two processes' clients: A takes the key, is paused past its lease, B takes the key over.
  redis_backend a(server.options()), b(server.options());
  cotune::redis::count_results_in(a, ledger);
  cotune::redis::count_results_in(b, ledger);
  const cotune::redis::lease_options short_lease{.ttl = std::chrono::milliseconds(150), .renew_in_background = false};
  auto raw = server.client();
  const std::string result_key = a.remote_key_of(key, "fill.autotune.json");
  const std::string late = R"({"kernel": "fill", "key": "n=7", "candidates": [], "by": "A"})";
  const std::string taken_over = R"({"kernel": "fill", "key": "n=7", "candidates": [], "by": "B"})";

  auto lease_a = cotune::redis::redis_lease::try_acquire(a, key, short_lease).lease;
  REQUIRE(lease_a);
  cotune::redis::fenced_lease held_a(a, key, std::move(*lease_a));
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // paused: its lease lapses
  auto lease_b = cotune::redis::redis_lease::try_acquire(b, key, short_lease).lease;
  REQUIRE(lease_b);
  {
    cotune::redis::fenced_lease held_b(b, key, std::move(*lease_b));
    CHECK(b.put(key, "fill.autotune.json", taken_over)); // B holds the key: stored and counted
    CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
    // A wakes up while B still holds the key: A's result is refused, B's stays, nothing is counted.
    CHECK_FALSE(a.put(key, "fill.autotune.json", late));
    CHECK(a.stats().fenced_writes == 1);
    CHECK(raw({"GET", result_key}).str == taken_over);
    CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
  }
  // B has stored and let go: A, later still, is refused too (the entry is there).
  CHECK_FALSE(a.put(key, "fill.autotune.json", late));
  CHECK(a.stats().fenced_writes == 2);
  CHECK(raw({"GET", result_key}).str == taken_over);
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
  // A lapsed lease nobody took, on a key nobody stored: the holder's put is stored and counted.
  const std::string other = cotune::detail::sha256_hex("ledger test key, lapsed");
  auto lease_c = cotune::redis::redis_lease::try_acquire(a, other, short_lease).lease;
  REQUIRE(lease_c);
  cotune::redis::fenced_lease held_c(a, other, std::move(*lease_c));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(a.put(other, "fill.autotune.json", late));
  CHECK(raw({"GET", a.remote_key_of(other, "fill.autotune.json")}).str == late);
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "2"); // the other key's result, counted once
  // Without a fence (the lease let go), puts are plain again.
  CHECK(a.put(key, "fill.so", "binary"));
}

TEST_CASE("on a server that runs no scripts, a lease holder's put is stored unfenced, as before",
          "[redis][job_ledger]") {
  cotune_test::redis_server server({"--rename-command", "EVAL", "\"\""});
  cotune_test::temp_dir local;
  auto dir = cotune::knobs().cache.dir.scoped(local.path().string());
  redis_backend a(server.options());
  cotune::redis::count_results_in(a, ledger);
  auto lease = cotune::redis::redis_lease::try_acquire(
                   a, key, {.ttl = std::chrono::milliseconds(5000), .renew_in_background = false})
                   .lease;
  REQUIRE(lease); // SET NX: no script needed to take it
  cotune::redis::fenced_lease held(a, key, std::move(*lease));
  CHECK(a.put(key, "fill.autotune.json", result_json));
  auto raw = server.client();
  CHECK(raw({"GET", a.remote_key_of(key, "fill.autotune.json")}).str == result_json);
  CHECK(raw({"HGET", ledger, "fill|n=7"}).str == "1");
}
