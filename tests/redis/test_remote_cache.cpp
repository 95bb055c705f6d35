// The remote cache manager over a real redis-server: cotune::redis::remote_cache
// (basic_remote_cache<redis_backend> from cotune/cache/remote_cache.hpp).

#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <cotune/backend/host_backend.hpp>
#include <cotune/cache/remote_cache.hpp>
#include <cotune/redis/redis.hpp>
#include <cotune/tune/binary_cache.hpp>

#include "../support/temp_dir.hpp"
#include "redis_server.hpp"

namespace fs = std::filesystem;
using cotune::knobs;
using cotune::redis::redis_backend;
using cotune::redis::remote_cache;

namespace {

const std::string key = cotune::detail::sha256_hex("remote cache test key");
const std::string other_key = cotune::detail::sha256_hex("another key");

/// One machine's local file cache: caches made inside `on()` live in its directory.
struct machine {
  cotune_test::temp_dir dir{"cotune-machine"};
  template <class F>
  decltype(auto) on(F&& f) {
    auto scope = knobs().cache.dir.scoped(dir.string());
    return f();
  }
  [[nodiscard]] bool holds_any_file() const {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path(), ec); it != fs::recursive_directory_iterator(); ++it)
      if (it->is_regular_file()) return true;
    return false;
  }
};

std::string binary_blob(std::size_t n) {
  std::mt19937 rng(7);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  s[0] = s[n / 3] = s[n - 1] = '\0';
  return s;
}

} // namespace

TEST_CASE("a remote hit is written to the local cache and served from there, then locally", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  a.on([&] { remote_cache(key, backend).put("{\"best\": 3}", "result.json"); });
  backend.reset_stats();
  b.on([&] {
    remote_cache cache(key, backend);
    auto path = cache.get_file("result.json");
    REQUIRE(path);
    CHECK(path->string().starts_with(b.dir.string()));
    CHECK(cotune::file_cache(key).get("result.json") == "{\"best\": 3}");
    CHECK(backend.stats().round_trips == 1);
    // Found locally now: no network at all.
    CHECK(cache.get("result.json") == "{\"best\": 3}");
    CHECK(cache.get_file("result.json") == path);
    CHECK(backend.stats().round_trips == 1);
    CHECK(!cache.get_file("absent.json"));
    CHECK(backend.stats().round_trips == 2);
  });
}

TEST_CASE("text and binary contents round trip through Redis", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  const std::string text = "hello, remote\n";
  const std::string blob = binary_blob(300000);
  a.on([&] {
    remote_cache cache(key, backend);
    cache.put(text, "a.txt");
    cache.put(blob, "kernel.cubin");
    cache.put("", "empty");
  });
  b.on([&] {
    remote_cache cache(key, backend);
    CHECK(cache.get("a.txt") == text);
    CHECK(cache.get("kernel.cubin") == blob);
    CHECK(cache.get("empty") == "");
    // What get_file points at is a verified local entry with the same content.
    auto path = cache.get_file("kernel.cubin");
    REQUIRE(path);
    CHECK(cotune::file_cache(key).get("kernel.cubin") == blob);
  });
}

TEST_CASE("a shared object built through the host backend is served from Redis after the local cache is wiped",
          "[redis][remote_cache][host_backend]") {
  cotune_test::redis_server server;
  machine local;
  auto url = cotune::redis::redis_knobs().url.scoped(server.url());
  auto prefix = cotune::redis::redis_knobs().prefix.scoped("host");
  auto flags = knobs().build.cxxflags.scoped("-O1");
  auto dir = knobs().cache.dir.scoped(local.dir.string());
  const cotune::kernel_source k{.name = "offset_add",
                                .code = "extern \"C\" void offset_add(int* out, int a) { *out = a + OFFSET; }\n",
                                .entry = "offset_add"};
  const cotune::config c{{"OFFSET", 5}};
  cotune::host_backend host;
  cotune::binary_cache<cotune::host_backend, remote_cache> binaries(host);

  auto first = binaries.get_or_compile(k, c, {});
  CHECK_FALSE(first.from_cache);
  fs::remove_all(local.dir.path()); // a new machine, or a wiped cache
  REQUIRE_FALSE(local.holds_any_file());

  auto& shared = redis_backend::shared();
  const auto hits = shared.stats().hits;
  auto second = binaries.get_or_compile(k, c, {});
  CHECK(second.from_cache);
  CHECK(shared.stats().hits == hits + 1);
  CHECK(second.binary.path.string().starts_with(local.dir.string()));
  auto fn = binaries.load(second, k, c, {});
  int out = 0, a = 37;
  int* out_ptr = &out;
  host.launch(fn, {}, out_ptr, a);
  CHECK(out == 42);
}

TEST_CASE("a group and its children come back in two round trips", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  a.on([&] {
    remote_cache cache(key, backend);
    cotune::cache_group children;
    children.emplace("k.cubin", cache.put(binary_blob(1000), "k.cubin"));
    children.emplace("k.json", cache.put("{\"shared\": 0}", "k.json"));
    cache.put_group("k", children);
  });
  backend.reset_stats();
  b.on([&] {
    remote_cache cache(key, backend);
    auto group = cache.get_group("k");
    REQUIRE(group);
    CHECK(group->size() == 2);
    CHECK(group->at("k.json").string().starts_with(b.dir.string()));
    CHECK(cache.get("k.json") == "{\"shared\": 0}");
    CHECK(backend.stats().round_trips == 2); // the group file, then both children at once
    // The local file cache reads the same group now.
    CHECK(cotune::file_cache(key).get_group("k") == group);
    CHECK(!cache.get_group("absent"));
  });
}

TEST_CASE("a group lists only the children that can be found", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  a.on([&] {
    remote_cache cache(key, backend);
    cotune::cache_group children;
    children.emplace("here.bin", cache.put("x", "here.bin"));
    children.emplace("gone.bin", cache.put("y", "gone.bin"));
    cache.put_group("g", children);
  });
  server.client()({"DEL", "test:" + key + ":gone.bin"});
  b.on([&] {
    auto group = remote_cache(key, backend).get_group("g");
    REQUIRE(group);
    CHECK(group->size() == 1);
    CHECK(group->count("here.bin") == 1);
  });
}

TEST_CASE("with a secret set, a wrongly signed and an unsigned entry are refused, counted and never kept locally",
          "[redis][remote_cache]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.secret = "team secret";
  redis_backend trusted(options);
  options.secret = "";
  redis_backend unsigned_writer(options);
  options.secret = "another secret";
  redis_backend wrong_writer(options);
  machine writer, reader;
  writer.on([&] {
    remote_cache(key, unsigned_writer).put("unsigned content", "unsigned.json");
    remote_cache(key, wrong_writer).put("wrongly signed content", "wrong.json");
    remote_cache(key, trusted).put("signed content", "signed.json");
  });
  reader.on([&] {
    remote_cache cache(key, trusted);
    CHECK(!cache.get("unsigned.json"));
    CHECK(!cache.get_file("wrong.json"));
    CHECK(trusted.stats().refused == 2);
    CHECK(!reader.holds_any_file());
    CHECK(cache.get("signed.json") == "signed content");
    // A reader without the secret cannot check signatures, but still checks the checksum.
    CHECK(remote_cache(key, unsigned_writer).get("wrong.json") == "wrongly signed content");
  });
}

TEST_CASE("an entry copied under another key or file name is refused", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  auto options = server.options();
  options.secret = "team secret";
  redis_backend backend(options);
  machine a, b;
  a.on([&] { remote_cache(key, backend).put("the real result", "result.json"); });
  auto raw = server.client();
  auto value = raw({"GET", "test:" + key + ":result.json"});
  REQUIRE(value.is_string());
  raw({"SET", "test:" + other_key + ":result.json", value.str});
  raw({"SET", "test:" + key + ":other.json", value.str});
  b.on([&] {
    CHECK(!remote_cache(other_key, backend).get("result.json"));
    CHECK(!remote_cache(key, backend).get("other.json"));
    CHECK(backend.stats().refused == 2);
    CHECK(!b.holds_any_file());
  });
}

TEST_CASE("garbage values are misses, counted, and never written locally", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  a.on([&] { remote_cache(key, backend).put("good content", "good.json"); });
  auto raw = server.client();
  const std::string prefix = "test:" + key + ":";
  const std::string good = raw({"GET", prefix + "good.json"}).str;
  std::string flipped = good;
  flipped.back() ^= 0x01;
  std::string wrong_version = good;
  wrong_version[8] = 9;
  raw({"SET", prefix + "junk", "raw junk, no envelope"});
  raw({"SET", prefix + "empty", ""});
  raw({"SET", prefix + "truncated", good.substr(0, good.size() - 3)});
  // The frame alone, without its payload (the frame is a trailer since cache format 3).
  raw({"SET", prefix + "header-only", good.substr(good.size() - cotune::detail::frame_size)});
  raw({"SET", prefix + "flipped", flipped});
  raw({"SET", prefix + "version", wrong_version});
  raw({"HSET", prefix + "hash", "field", good});
  b.on([&] {
    remote_cache cache(key, backend);
    for (const char* name : {"junk", "empty", "truncated", "header-only", "flipped", "version", "hash"}) {
      INFO(name);
      CHECK(!cache.get(name));
    }
    CHECK(backend.stats().refused == 7);
    CHECK(!b.holds_any_file());
    CHECK(cache.get("good.json") == "good content");
  });
}

TEST_CASE("hostile names are refused by the cache and reach no key", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine m;
  m.on([&] {
    remote_cache cache(key, backend);
    for (const std::string& name : std::vector<std::string>{"a:b", "../x", "x\r\nDEL y", "two words", "a/b"}) {
      INFO(cotune::detail::shown_name(name));
      CHECK_THROWS_AS(cache.put("evil", name), cotune::cache_error);
      CHECK_THROWS_AS((void)cache.get(name), cotune::cache_error);
      CHECK_THROWS_AS(cache.put_group(name, {}), cotune::cache_error);
    }
    cotune::cache_group hostile_child{{"a:b", "/tmp/x"}};
    CHECK_THROWS_AS(cache.put_group("g", hostile_child), cotune::cache_error);
    CHECK_THROWS_AS(remote_cache("not-hex", backend), cotune::cache_error);
  });
  CHECK(server.client()({"DBSIZE"}).integer == 0);
  CHECK(backend.stats().round_trips == 0);
}

TEST_CASE("a read-only client reads from Redis but never writes to it", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend writer(server.options());
  auto options = server.options();
  options.read_only = true;
  redis_backend reader(options);
  machine a, b;
  a.on([&] { remote_cache(key, writer).put("shared", "shared.json"); });
  b.on([&] {
    remote_cache cache(key, reader);
    CHECK(cache.get("shared.json") == "shared");
    auto path = cache.put("mine", "mine.json");
    CHECK(fs::exists(path)); // kept locally
    cotune::cache_group g{{"mine.json", path}};
    cache.put_group("g", g);
  });
  auto raw = server.client();
  CHECK(raw({"DBSIZE"}).integer == 1);
  CHECK(reader.stats().writes == 0);
}

TEST_CASE("an unreachable Redis costs one connect attempt and the local cache carries on", "[redis][remote_cache]") {
  cotune::redis::redis_options options;
  options.endpoint.port = cotune_test::free_loopback_port();
  options.prefix = "test";
  redis_backend backend(options);
  machine m;
  m.on([&] {
    remote_cache cache(key, backend);
    auto path = cache.put("local only", "a.json");
    CHECK(fs::exists(path));
    CHECK(cache.get("a.json") == "local only");
    for (int i = 0; i < 10; ++i) CHECK(!cache.get_file(fmt::format("missing{}.json", i)));
    CHECK(!cache.get_group("g"));
  });
  auto s = backend.stats();
  CHECK(s.connects == 1);
  CHECK(s.round_trips == 0);
  CHECK(s.backoff_skips == 11);
}

TEST_CASE("the cache's async members run off the caller's thread", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine a, b;
  a.on([&] { remote_cache(key, backend).put("async", "a.json"); });
  b.on([&] {
    remote_cache cache(key, backend);
    boost::asio::io_context io;
    std::optional<std::string> got;
    std::optional<fs::path> path;
    fs::path written;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          got = co_await cache.async_get("a.json");
          path = co_await cache.async_get_file("a.json");
          written = co_await cache.async_put("more", "b.json");
        },
        boost::asio::detached);
    io.run();
    CHECK(got == "async");
    CHECK(path);
    CHECK(fs::exists(written));
  });
  CHECK(server.client()({"EXISTS", "test:" + key + ":b.json"}).integer == 1);
}

TEST_CASE("dump and override caches stay local", "[redis][remote_cache]") {
  cotune_test::redis_server server;
  cotune_test::private_cache local;
  auto url = cotune::redis::redis_knobs().url.scoped(server.url());
  remote_cache dump(key, cotune::cache_mode::dump);
  auto path = dump.put("for people", "notes.txt");
  CHECK(path.string().starts_with(local.dump_dir().string()));
  CHECK(dump.get("notes.txt") == "for people");
  CHECK(server.client()({"DBSIZE"}).integer == 0);
}
