// Tuning leases against a real redis-server, raced by real processes (fork).

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <cotune/redis/redis.hpp>

#include "../support/temp_dir.hpp"
#include "redis_server.hpp"

using namespace std::chrono_literals;
using cotune::redis::acquire_or_wait;
using cotune::redis::lease_options;
using cotune::redis::lease_status;
using cotune::redis::redis_backend;
using cotune::redis::try_acquire_lease;

namespace {

std::string key_for(std::string_view what) { return cotune::detail::sha256_hex(what); }

lease_options quick_lease(std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 20s) {
  lease_options o;
  o.ttl = ttl;
  o.wait = wait;
  o.first_poll = 10ms;
  o.max_poll = 50ms;
  return o;
}

/// A pipe that releases every child blocked on `wait()` at once, when the parent calls `open()`.
class start_gate {
public:
  start_gate() {
    if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
  }
  ~start_gate() {
    close_end(0);
    close_end(1);
  }
  /// In a child: blocks until the parent opens the gate.
  void wait() {
    close_end(1);
    char c;
    while (::read(fds_[0], &c, 1) < 0 && errno == EINTR) {
    }
  }
  /// In the parent: releases the children (they read end-of-file).
  void open() { close_end(1); }

private:
  void close_end(int i) {
    if (fds_[i] >= 0) ::close(fds_[i]);
    fds_[i] = -1;
  }
  int fds_[2] = {-1, -1};
};

/// Runs `body` in a child process, which exits with body's result (never returning into Catch).
template <class F>
pid_t spawn_child(F body) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int code = 97;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  return pid;
}

/// The child's exit code, or 128 + signal.
int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

TEST_CASE("of 4 processes racing for one key, exactly one acquires the lease", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  const auto options = server.options();
  for (int round = 0; round < 5; ++round) {
    const std::string key = key_for(fmt::format("race {}", round));
    start_gate gate;
    std::vector<pid_t> children;
    for (int i = 0; i < 4; ++i)
      children.push_back(spawn_child([&] {
        gate.wait();
        redis_backend backend(options);
        auto lease = try_acquire_lease(backend, key, quick_lease(10s));
        if (lease) ::_exit(0); // exits holding it, so that no later racer can find it free
        return 1;
      }));
    gate.open();
    std::map<int, int> codes;
    for (auto pid : children) ++codes[wait_child(pid)];
    INFO("round " << round);
    CHECK(codes[0] == 1);
    CHECK(codes[1] == 3);
  }
}

TEST_CASE("4 processes tuning one untuned key tune it once", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  const auto options = server.options();
  const std::string key = key_for("untuned key");
  cotune_test::temp_dir root("cotune-lease");
  start_gate gate;
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i)
    children.push_back(spawn_child([&, i] {
      gate.wait();
      cotune::knobs().cache.dir.set((root.path() / std::to_string(i)).string()); // each its own machine
      redis_backend backend(options);
      cotune::redis::remote_cache cache(key, backend);
      auto r = acquire_or_wait(backend, key, [&] { return cache.get("result.json").has_value(); },
                               quick_lease(5s));
      if (r.status == lease_status::acquired) {
        std::this_thread::sleep_for(300ms); // tuning
        cache.put(fmt::format("{{\"tuned_by\": {}}}", i), "result.json");
        r.lease->release();
        return 10;
      }
      if (r.status == lease_status::ready) return cache.get("result.json") ? 11 : 13;
      return 20 + static_cast<int>(r.status);
    }));
  gate.open();
  std::map<int, int> codes;
  for (auto pid : children) ++codes[wait_child(pid)];
  CHECK(codes[10] == 1); // tuned
  CHECK(codes[11] == 3); // used the result
  auto raw = server.client();
  CHECK(raw({"EXISTS", "test:" + key + ":result.json"}).integer == 1);
  CHECK(raw({"EXISTS", "test:lease:" + key}).integer == 0); // released
}

TEST_CASE("a holder that dies loses the lease at expiry and a waiter takes over", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  const auto options = server.options();
  const std::string key = key_for("holder dies");
  int ready_pipe[2];
  REQUIRE(::pipe(ready_pipe) == 0);
  const pid_t holder = spawn_child([&] {
    ::close(ready_pipe[0]);
    redis_backend backend(options);
    auto lease = try_acquire_lease(backend, key, quick_lease(600ms)); // renewed in the background
    const char c = lease ? 'y' : 'n';
    if (::write(ready_pipe[1], &c, 1) != 1) return 2;
    std::this_thread::sleep_for(60s); // killed long before
    return 0;
  });
  ::close(ready_pipe[1]);
  char c = 0;
  REQUIRE(::read(ready_pipe[0], &c, 1) == 1);
  ::close(ready_pipe[0]);
  REQUIRE(c == 'y');

  redis_backend backend(options);
  // Renewed while its holder lives: still held after twice its lifetime.
  std::this_thread::sleep_for(1200ms);
  CHECK(!try_acquire_lease(backend, key, quick_lease(600ms)));
  const auto old_token = cotune::redis::lease_holder(backend, key);
  REQUIRE(old_token);

  ::kill(holder, SIGKILL);
  CHECK(wait_child(holder) == 128 + SIGKILL);
  auto r = acquire_or_wait(backend, key, [] { return false; }, quick_lease(600ms, 20s));
  REQUIRE(r.status == lease_status::acquired);
  CHECK(r.took_over);
  CHECK(cotune::redis::lease_holder(backend, key) == r.lease->token());
  CHECK(r.lease->token() != *old_token);
  CHECK(r.lease->release());
  CHECK(!cotune::redis::lease_holder(backend, key));
}

TEST_CASE("release by a non-holder has no effect", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  const std::string key = key_for("non-holder");
  auto no_renewal = quick_lease(300ms);
  no_renewal.renew_in_background = false;
  auto first = try_acquire_lease(backend, key, no_renewal);
  REQUIRE(first);
  CHECK_FALSE(cotune::redis::release_lease(backend, key, "not the token"));
  CHECK(cotune::redis::lease_holder(backend, key) == first->token());

  // The first holder stalls past its lifetime; a second takes the lease; the first's release and
  // renewal must not touch the second's.
  for (int i = 0; i < 200 && cotune::redis::lease_holder(backend, key); ++i) std::this_thread::sleep_for(10ms);
  auto second = try_acquire_lease(backend, key, no_renewal);
  REQUIRE(second);
  CHECK_FALSE(first->renew());
  CHECK_FALSE(first->held());
  CHECK_FALSE(first->release());
  CHECK(cotune::redis::lease_holder(backend, key) == second->token());
  CHECK(second->renew());
  CHECK(second->held());
}

TEST_CASE("an explicit renewal extends the lease to a full lifetime", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  const std::string key = key_for("renew");
  auto o = quick_lease(10s);
  o.renew_in_background = false;
  auto lease = try_acquire_lease(backend, key, o);
  REQUIRE(lease);
  auto raw = server.client();
  raw({"PEXPIRE", "test:lease:" + key, "2000"});
  CHECK(raw({"PTTL", "test:lease:" + key}).integer <= 2000);
  CHECK(lease->renew());
  CHECK(raw({"PTTL", "test:lease:" + key}).integer > 5000);
  CHECK(lease->key() == "test:lease:" + key);
}

TEST_CASE("a waiter gives up after the wait bound while a live holder keeps the lease", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  redis_backend holder_backend(server.options()), waiter_backend(server.options());
  const std::string key = key_for("long tuning");
  auto lease = try_acquire_lease(holder_backend, key, quick_lease(600ms));
  REQUIRE(lease);
  auto r = acquire_or_wait(waiter_backend, key, [] { return false; }, quick_lease(600ms, 300ms));
  CHECK(r.status == lease_status::timed_out);
  CHECK(!r.lease);
  CHECK(lease->held());
}

TEST_CASE("a waiter returns ready as soon as the holder's result appears", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  redis_backend holder_backend(server.options()), waiter_backend(server.options());
  const std::string key = key_for("result appears");
  auto lease = try_acquire_lease(holder_backend, key, quick_lease(5s));
  REQUIRE(lease);
  std::atomic<bool> published{false};
  std::thread holder([&] {
    std::this_thread::sleep_for(200ms);
    published = true;
    lease->release();
  });
  auto r = acquire_or_wait(waiter_backend, key, [&] { return published.load(); }, quick_lease(5s));
  holder.join();
  CHECK(r.status == lease_status::ready);
  CHECK(!r.lease);
}

TEST_CASE("a read-only client never takes a lease but waits on a holder's", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  auto ro = server.options();
  ro.read_only = true;
  redis_backend reader(ro), writer(server.options());
  const std::string key = key_for("read-only");
  CHECK(!try_acquire_lease(reader, key, quick_lease(5s)));
  auto alone = acquire_or_wait(reader, key, [] { return false; }, quick_lease(5s));
  CHECK(alone.status == lease_status::unavailable);
  CHECK(!cotune::redis::lease_holder(writer, key));

  auto lease = try_acquire_lease(writer, key, quick_lease(5s));
  REQUIRE(lease);
  std::atomic<bool> published{false};
  std::thread holder([&] {
    std::this_thread::sleep_for(100ms);
    published = true;
  });
  auto r = acquire_or_wait(reader, key, [&] { return published.load(); }, quick_lease(5s));
  holder.join();
  CHECK(r.status == lease_status::ready);
}

TEST_CASE("without Redis, acquire_or_wait says unavailable at once", "[redis][redis_lease]") {
  cotune::redis::redis_options options;
  options.endpoint.port = cotune_test::free_loopback_port();
  redis_backend backend(options);
  const auto start = std::chrono::steady_clock::now();
  auto r = acquire_or_wait(backend, key_for("no redis"), [] { return false; }, quick_lease(5s, 5s));
  CHECK(r.status == lease_status::unavailable);
  CHECK(std::chrono::steady_clock::now() - start < 5s); // did not wait out the bound
  CHECK(backend.stats().connects == 1);
}

TEST_CASE("async_acquire_or_wait waits on timers and ends when the result appears", "[redis][redis_lease]") {
  cotune_test::redis_server server;
  redis_backend holder_backend(server.options()), waiter_backend(server.options());
  const std::string key = key_for("async wait");
  auto lease = try_acquire_lease(holder_backend, key, quick_lease(5s));
  REQUIRE(lease);
  std::atomic<bool> published{false};
  boost::asio::io_context io;
  std::optional<cotune::redis::lease_result> result;
  int ticks = 0;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        // Named before the co_await: GCC 12 destroys closure temporaries of a co_await operand twice.
        std::function<bool()> ready = [&] { return published.load(); };
        result = co_await cotune::redis::async_acquire_or_wait(waiter_backend, key, std::move(ready), quick_lease(5s));
      },
      boost::asio::detached);
  // The io_context's thread stays free while the coroutine waits: other work runs on it.
  boost::asio::steady_timer tick(io);
  std::function<void()> schedule = [&] {
    tick.expires_after(20ms);
    tick.async_wait([&](boost::system::error_code) {
      if (++ticks == 10) {
        published = true;
        lease->release();
      } else if (!result) {
        schedule();
      }
    });
  };
  schedule();
  io.run();
  REQUIRE(result);
  CHECK(result->status == lease_status::ready);
  CHECK(ticks >= 10);

  // Free key: acquired at once, and the lease is usable after the coroutine ends.
  std::optional<cotune::redis::lease_result> second;
  boost::asio::io_context io2;
  boost::asio::co_spawn(
      io2,
      [&]() -> boost::asio::awaitable<void> {
        std::function<bool()> never = [] { return false; };
        second = co_await cotune::redis::async_acquire_or_wait(waiter_backend, key_for("free"), std::move(never),
                                                               quick_lease(5s));
      },
      boost::asio::detached);
  io2.run();
  REQUIRE(second);
  REQUIRE(second->status == lease_status::acquired);
  CHECK(second->lease->held());
  CHECK(second->lease->release());
}
