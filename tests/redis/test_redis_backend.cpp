#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <cotune/redis/redis_backend.hpp>

#include "redis_server.hpp"

using namespace std::chrono_literals;
using cotune::redis::redis_backend;
using cotune::redis::redis_options;

namespace {

const std::string key = cotune::detail::sha256_hex("test key");
const std::string other_key = cotune::detail::sha256_hex("other key");

std::string binary_blob(std::size_t n) {
  std::mt19937 rng(42);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  s[0] = '\0';
  s[n / 2] = '\0';
  s[n - 1] = '\0';
  return s;
}

/// Runs `f` and tells whether it took at least `threshold` (to count slow calls, never to assert timings).
template <class F>
bool took_at_least(std::chrono::milliseconds threshold, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - start >= threshold;
}

std::vector<std::string> names(std::initializer_list<const char*> list) { return {list.begin(), list.end()}; }

} // namespace

TEST_CASE("a stored value is a hit and an absent name is a miss, in one round trip", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  REQUIRE(backend.put(key, "a.txt", "hello"));
  auto found = backend.get(key, names({"a.txt", "b.txt"}));
  REQUIRE(found.size() == 1);
  CHECK(found.at("a.txt") == "hello");
  auto s = backend.stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
  CHECK(s.writes == 1);
  CHECK(s.connects == 1);
  CHECK(s.round_trips == 2); // one SET, one read of both names
  CHECK(s.errors == 0);
}

TEST_CASE("values are stored under <prefix>:<hex key>:<file name>", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  REQUIRE(backend.put(key, "kernel.so", "bytes"));
  auto raw = server.client();
  auto r = raw({"GET", "test:" + key + ":kernel.so"});
  REQUIRE(r.is_string());
  CHECK(r.str == "bytes");
  CHECK(backend.remote_key_of(key, "kernel.so") == "test:" + key + ":kernel.so");
  CHECK(raw({"DBSIZE"}).integer == 1);
}

TEST_CASE("binary values with NUL bytes round trip", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  const auto blob = binary_blob(1 << 20);
  REQUIRE(backend.put(key, "blob.bin", blob));
  auto found = backend.get(key, names({"blob.bin"}));
  REQUIRE(found.count("blob.bin") == 1);
  CHECK(found.at("blob.bin") == blob);
}

TEST_CASE("hostile names and keys are refused and reach no other key", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto raw = server.client();
  raw({"SET", "y", "sentinel"});
  raw({"SET", "test:" + key + ":b", "other entry"});
  redis_backend backend(server.options());
  for (const std::string& name : std::vector<std::string>{"a:b", "../x", "x\r\nDEL y", "with space", "", "a/b", "tab\there", "..", ".tmp.x",
                           std::string("nul\0byte", 8), "bell\x07"}) {
    INFO("name: " << cotune::detail::shown_name(name));
    CHECK_THROWS_AS(backend.put(key, name, "evil"), cotune::cache_error);
    std::vector<std::string> one{name};
    CHECK_THROWS_AS(backend.get(key, one), cotune::cache_error);
  }
  for (const std::string& bad_key : std::vector<std::string>{"ABCD", "abc:def", "../..", "", "abc", "zz", "ab cd"}) {
    INFO("key: " << bad_key);
    CHECK_THROWS_AS(backend.put(bad_key, "a.txt", "evil"), cotune::cache_error);
  }
  auto bad_prefix = server.options();
  bad_prefix.prefix = "a:b";
  CHECK_THROWS_AS(redis_backend(bad_prefix), cotune::cache_error);
  // Nothing was written, nothing was deleted, and no command was even sent.
  CHECK(raw({"DBSIZE"}).integer == 2);
  CHECK(raw({"GET", "y"}).str == "sentinel");
  CHECK(backend.stats().round_trips == 0);
}

TEST_CASE("a value of another type or over the size limit is a miss counted as refused", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto raw = server.client();
  auto options = server.options();
  options.max_value_bytes = 1024;
  redis_backend backend(options);
  raw({"HSET", "test:" + key + ":hash", "field", "value"});
  raw({"RPUSH", "test:" + key + ":list", "a", "b"});
  raw({"SET", "test:" + key + ":big", std::string(1025, 'x')});
  raw({"SET", "test:" + key + ":fits", std::string(1024, 'x')});
  auto found = backend.get(key, names({"hash", "list", "big", "fits", "absent"}));
  CHECK(found.size() == 1);
  CHECK(found.count("fits") == 1);
  auto s = backend.stats();
  CHECK(s.refused == 3);
  CHECK(s.misses == 4);
  CHECK(s.hits == 1);
  CHECK(s.round_trips == 1);
  // Too large to write either.
  CHECK_FALSE(backend.put(key, "big2", std::string(1025, 'y')));
  CHECK(backend.stats().skipped_writes == 1);
  CHECK(raw({"EXISTS", "test:" + key + ":big2"}).integer == 0);
}

TEST_CASE("before Redis 7 (no EVAL_RO), reads use EVAL and still refuse other types", "[redis][redis_backend]") {
  cotune_test::redis_server server({"--rename-command", "EVAL_RO", ""});
  redis_backend backend(server.options());
  REQUIRE(backend.put(key, "a.txt", "hello"));
  auto raw = server.client();
  raw({"HSET", "test:" + key + ":hash", "field", "value"});
  auto found = backend.get(key, names({"a.txt", "hash"}));
  CHECK(found.size() == 1);
  CHECK(backend.stats().refused == 1);
  const auto before = backend.stats().round_trips;
  CHECK(backend.get(key, names({"a.txt"})).size() == 1);
  CHECK(backend.stats().round_trips == before + 1);
}

TEST_CASE("without scripting on the server, reads fall back to MGET", "[redis][redis_backend]") {
  cotune_test::redis_server server({"--rename-command", "EVAL", "", "--rename-command", "EVAL_RO", ""});
  redis_backend backend(server.options());
  REQUIRE(backend.put(key, "a.txt", "hello"));
  auto raw = server.client();
  raw({"HSET", "test:" + key + ":hash", "field", "value"});
  auto found = backend.get(key, names({"a.txt", "hash", "absent"}));
  CHECK(found.size() == 1);
  CHECK(found.at("a.txt") == "hello");
  // Later reads go straight to MGET: one round trip each.
  const auto before = backend.stats().round_trips;
  CHECK(backend.get(key, names({"a.txt"})).size() == 1);
  CHECK(backend.stats().round_trips == before + 1);
}

TEST_CASE("a refused connection costs one connect attempt, then calls return at once during the backoff",
          "[redis][redis_backend]") {
  redis_options options;
  options.endpoint.port = cotune_test::free_loopback_port(); // nobody listens there
  options.connect_timeout = 100ms;
  options.backoff = 60s;
  redis_backend backend(options);
  int slow = 0;
  for (int i = 0; i < 20; ++i) {
    slow += took_at_least(options.connect_timeout, [&] { CHECK(backend.get(key, names({"a.txt"})).empty()); });
    slow += took_at_least(options.connect_timeout, [&] { CHECK_FALSE(backend.put(key, "a.txt", "x")); });
  }
  auto s = backend.stats();
  CHECK(s.connects == 1);
  CHECK(s.connect_failures == 1);
  CHECK(s.backoff_skips == 39);
  CHECK(s.round_trips == 0);
  CHECK(slow <= 1);
  CHECK(backend.backing_off());
  CHECK(backend.last_error().find(std::to_string(options.endpoint.port)) != std::string::npos);
  // Once the backoff is over, the next call tries again (and pays one more attempt).
  backend.reset_backoff();
  CHECK(backend.get(key, names({"a.txt"})).empty());
  CHECK(backend.stats().connects == 2);
}

TEST_CASE("a server that never accepts costs one connect timeout", "[redis][redis_backend]") {
  // A listening socket whose accept queue is full: Linux drops further SYNs, so a connect hangs
  // until the client's timeout, as with a firewalled or vanished host.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  REQUIRE(::listen(listener, 0) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 3; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(50ms);

  redis_options options;
  options.endpoint.port = ntohs(addr.sin_port);
  options.connect_timeout = 200ms;
  redis_backend backend(options);
  const auto start = std::chrono::steady_clock::now();
  CHECK(backend.get(key, names({"a.txt"})).empty());
  const auto first = std::chrono::steady_clock::now() - start;
  int slow = 0;
  for (int i = 0; i < 10; ++i)
    slow += took_at_least(options.connect_timeout, [&] { (void)backend.get(key, names({"a.txt"})); });
  auto s = backend.stats();
  CHECK(s.connects == 1);
  CHECK(s.connect_failures == 1);
  CHECK(s.backoff_skips == 10);
  CHECK(slow == 0);
  CHECK(first < 5 * options.connect_timeout); // bounded by the connect timeout (generously)
  for (int fd : fillers) ::close(fd);
  ::close(listener);
}

TEST_CASE("a server frozen mid-operation stalls a call no longer than the operation timeout",
          "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.timeout = 300ms;
  redis_backend backend(options);
  REQUIRE(backend.put(key, "a.txt", "hello"));
  {
    server.freeze();
    cotune_test::resume_on_exit resume{server};
    const auto start = std::chrono::steady_clock::now();
    auto found = backend.get(key, names({"a.txt"}));
    const auto stalled = std::chrono::steady_clock::now() - start;
    CHECK(found.empty()); // it returns, as a miss
    CHECK(stalled < 5 * options.timeout);
    CHECK(backend.stats().timeouts == 1);
    // During the backoff, calls do not wait on the frozen server again.
    int slow = 0;
    for (int i = 0; i < 5; ++i) {
      slow += took_at_least(options.timeout, [&] { CHECK(backend.get(key, names({"a.txt"})).empty()); });
      slow += took_at_least(options.timeout, [&] { CHECK_FALSE(backend.put(key, "b.txt", "x")); });
    }
    CHECK(slow == 0);
    CHECK(backend.stats().backoff_skips == 10);
  }
  // Thawed, and the backoff ended: the backend reconnects and the value is still there.
  backend.reset_backoff();
  auto found = backend.get(key, names({"a.txt"}));
  REQUIRE(found.count("a.txt") == 1);
  CHECK(backend.stats().connects == 2);
}

TEST_CASE("a large write to a frozen server stalls no longer than a few operation timeouts",
          "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.timeout = 300ms;
  redis_backend backend(options);
  REQUIRE(backend.put(key, "a.txt", "hello"));
  server.freeze();
  cotune_test::resume_on_exit resume{server};
  // Larger than the socket buffers: the write itself blocks, and the send timeout ends it.
  const std::string big(32 << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(backend.put(key, "big.bin", big));
  CHECK(std::chrono::steady_clock::now() - start < 5 * options.timeout);
  CHECK(backend.stats().timeouts == 1);
  CHECK(backend.backing_off());
}

TEST_CASE("concurrent calls during an outage pay one timeout between them", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.timeout = 300ms;
  redis_backend backend(options);
  REQUIRE(backend.put(key, "a.txt", "hello"));
  server.freeze();
  cotune_test::resume_on_exit resume{server};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { (void)backend.get(key, names({"a.txt"})); });
  for (auto& t : threads) t.join();
  auto s = backend.stats();
  CHECK(s.timeouts == 1);
  CHECK(s.connects == 1);
  CHECK(s.backoff_skips == 7);
}

TEST_CASE("a connection the server closed is replaced without a backoff", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  REQUIRE(backend.put(key, "a.txt", "hello"));
  auto raw = server.client();
  // Closes every other client's connection (ours included), as a server restart or idle timeout would.
  auto killed = raw({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  REQUIRE(killed.integer == 1);
  auto found = backend.get(key, names({"a.txt"}));
  CHECK(found.count("a.txt") == 1);
  auto s = backend.stats();
  CHECK(s.connects == 2);
  CHECK(s.backoff_skips == 0);
  CHECK_FALSE(backend.backing_off());
}

TEST_CASE("the URL's password and database are used, and the password never shows", "[redis][redis_backend]") {
  cotune_test::redis_server server({"--requirepass", "s3cret"});
  auto options = server.options();
  options.endpoint = cotune::redis::parse_redis_url(fmt::format("redis://:s3cret@127.0.0.1:{}/3", server.port()));
  redis_backend backend(options);
  REQUIRE(backend.put(key, "a.txt", "hello"));
  CHECK(backend.get(key, names({"a.txt"})).size() == 1);
  auto raw = server.client();
  REQUIRE(raw({"AUTH", "s3cret"}).is_status("OK"));
  REQUIRE(raw({"SELECT", "3"}).is_status("OK"));
  CHECK(raw({"GET", "test:" + key + ":a.txt"}).str == "hello");

  auto wrong = server.options();
  wrong.endpoint = cotune::redis::parse_redis_url(fmt::format("redis://:wrong-pass@127.0.0.1:{}", server.port()));
  redis_backend refused(wrong);
  CHECK(refused.get(key, names({"a.txt"})).empty());
  CHECK(refused.stats().connect_failures == 1);
  CHECK(refused.last_error().find("AUTH") != std::string::npos);
  CHECK(refused.last_error().find("wrong-pass") == std::string::npos);
}

TEST_CASE("a read-only backend never writes", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.read_only = true;
  redis_backend backend(options);
  CHECK(backend.read_only());
  CHECK_FALSE(backend.put(key, "a.txt", "hello"));
  CHECK(backend.stats().skipped_writes == 1);
  CHECK(backend.stats().round_trips == 0);
  CHECK(server.client()({"DBSIZE"}).integer == 0);
}

TEST_CASE("async calls run off the caller's thread and resume on its executor", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  boost::asio::io_context io;
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on, resumed_on;
  bool stored = false;
  cotune::remote_values found;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        stored = co_await backend.async_put(key, std::string("a.txt"), std::string("hello"));
        // Built before the co_await: GCC 12 miscompiles initializer lists inside co_await expressions.
        std::vector<std::string> wanted{"a.txt", "b.txt"};
        found = co_await backend.async_get(key, std::move(wanted));
        ran_on = co_await backend.async_run([] { return std::this_thread::get_id(); });
        resumed_on = std::this_thread::get_id();
        co_await backend.async_run([] {}); // void results work too
      },
      boost::asio::detached);
  io.run();
  CHECK(stored);
  CHECK(found.size() == 1);
  CHECK(ran_on != caller);
  CHECK(resumed_on == caller);
}

TEST_CASE("an exception thrown off-thread reaches the awaiting coroutine", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  boost::asio::io_context io;
  bool caught = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        try {
          std::vector<std::string> hostile{"a:b"};
          (void)co_await backend.async_get(key, std::move(hostile));
        } catch (const cotune::cache_error&) {
          caught = true;
        }
      },
      boost::asio::detached);
  io.run();
  CHECK(caught);
}

TEST_CASE("the shared backend follows the knobs", "[redis][redis_backend]") {
  cotune_test::redis_server server;
  auto& k = cotune::redis::redis_knobs();
  auto url = k.url.scoped(server.url());
  auto prefix = k.prefix.scoped("shared");
  auto& backend = redis_backend::shared();
  REQUIRE(backend.put(key, "a.txt", "hello"));
  CHECK(server.client()({"GET", "shared:" + key + ":a.txt"}).str == "hello");
  {
    auto ro = k.read_only.scoped(true);
    CHECK(backend.read_only());
    CHECK_FALSE(backend.put(key, "b.txt", "x"));
  }
  auto secret = k.secret.scoped(std::string("s"));
  CHECK(backend.secret() == "s");
  // Another server: the shared backend reconnects there.
  cotune_test::redis_server second;
  auto url2 = k.url.scoped(second.url());
  CHECK(backend.get(key, names({"a.txt"})).empty());
  REQUIRE(backend.put(key, "a.txt", "there"));
  CHECK(second.client()({"GET", "shared:" + key + ":a.txt"}).str == "there");
}
