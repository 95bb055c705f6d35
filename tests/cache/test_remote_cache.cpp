// The remote cache manager (cotune/cache/remote_cache.hpp) and the remote key rules
// (cotune/cache/remote_backend.hpp), over an in-process RemoteBackend: a real, thread-safe store in
// memory, so that these tests need no server. tests/redis/test_remote_cache.cpp runs the same
// manager against a real redis-server.

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cache/file_cache.hpp>
#include <cotune/cache/remote_backend.hpp>
#include <cotune/cache/remote_cache.hpp>
#include <cotune/detail/files.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using cotune::basic_remote_cache;
using cotune::knobs;

namespace {

/// A remote store in this process's memory, with the same key rules as any backend.
class memory_backend {
public:
  [[nodiscard]] static memory_backend& shared() {
    static memory_backend instance;
    return instance;
  }
  [[nodiscard]] cotune::remote_values get(std::string_view key, std::span<const std::string> names) {
    std::lock_guard lock(mutex_);
    ++gets;
    cotune::remote_values found;
    for (const auto& name : names)
      if (auto it = store.find(cotune::remote_key("mem", key, name)); it != store.end()) found.emplace(name, it->second);
    return found;
  }
  bool put(std::string_view key, std::string_view name, std::string_view value) {
    std::lock_guard lock(mutex_);
    auto k = cotune::remote_key("mem", key, name);
    if (read_only_) return false;
    ++puts;
    store[k] = std::string(value);
    return true;
  }
  [[nodiscard]] std::string secret() const { return secret_; }
  [[nodiscard]] bool read_only() const { return read_only_; }
  void count_refused() { ++refused; }

  std::map<std::string, std::string> store;
  int gets = 0, puts = 0, refused = 0;
  std::string secret_;
  bool read_only_ = false;

private:
  std::mutex mutex_;
};

using memory_cache = basic_remote_cache<memory_backend>;

static_assert(cotune::RemoteBackend<memory_backend>);
static_assert(cotune::SharedRemoteBackend<memory_backend>);
static_assert(cotune::RemoteRefusalCounter<memory_backend>);
static_assert(!cotune::AsyncRemoteRunner<memory_backend>);
static_assert(cotune::CacheManager<memory_cache>);
static_assert(!cotune::RemoteBackend<cotune::file_cache>);

const std::string key = cotune::detail::sha256_hex("key");
const std::string other_key = cotune::detail::sha256_hex("other");

/// One machine's local cache directory.
struct machine {
  cotune_test::temp_dir dir{"cotune-machine"};
  template <class F>
  decltype(auto) on(F&& f) {
    auto scope = knobs().cache.dir.scoped(dir.string());
    return f();
  }
  [[nodiscard]] bool holds_any_file() const {
    for (auto& e : fs::recursive_directory_iterator(dir.path()))
      if (e.is_regular_file()) return true;
    return false;
  }
};

} // namespace

TEST_CASE("remote key parts are validated", "[cache][remote_cache]") {
  static_assert(cotune::is_valid_remote_prefix("cotune"));
  static_assert(cotune::is_valid_remote_prefix("team-a.v2_x"));
  static_assert(!cotune::is_valid_remote_prefix(""));
  static_assert(!cotune::is_valid_remote_prefix("a:b"));
  static_assert(!cotune::is_valid_remote_prefix("a b"));
  CHECK(cotune::is_valid_remote_prefix(std::string(64, 'p')));
  CHECK_FALSE(cotune::is_valid_remote_prefix(std::string(65, 'p')));
  CHECK(cotune::remote_key("cotune", "00ff", "k.so") == "cotune:00ff:k.so");
  for (const std::string& name : std::vector<std::string>{"a:b", "a b", "x\r\nDEL y", "tab\t", "../x", "a/b", "",
                                                          "..", ".tmp.x", std::string("n\0l", 3), "del\x7f"}) {
    INFO(cotune::detail::shown_name(name));
    CHECK_THROWS_AS(cotune::validate_remote_file_name(name), cotune::cache_error);
  }
  CHECK_NOTHROW(cotune::validate_remote_file_name("__grp__kernel.json"));
  CHECK_NOTHROW(cotune::validate_remote_file_name("kernel.ptx"));
  for (const std::string& k : std::vector<std::string>{"", "abc", "ABCD", "ab:cd", "zz", std::string(130, 'a')}) {
    INFO(k);
    CHECK_THROWS_AS(cotune::validate_remote_key(k), cotune::cache_error);
  }
  CHECK_THROWS_AS(cotune::validate_remote_prefix("a:b"), cotune::cache_error);
  // Error messages show control characters escaped, so they cannot forge log lines.
  try {
    cotune::validate_remote_file_name("x\r\nDEL y");
  } catch (const cotune::cache_error& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK(std::string(e.what()).find("\\x0d\\x0a") != std::string::npos);
  }
}

TEST_CASE("remote values are framed exactly as local entries are", "[cache][remote_cache]") {
  memory_backend backend;
  machine a;
  const std::string content("binary\0content", 14);
  a.on([&] {
    const auto path = memory_cache(key, backend).put(content, "k.so");
    const auto value = backend.store.at(cotune::remote_key("mem", key, "k.so"));
    // One format: the remote value is the local file, byte for byte (no local key, no remote secret).
    CHECK(value == cotune::detail::read_file(path));
    CHECK(value == cotune::detail::frame_entry(key, "k.so", content));
    CHECK(cotune::detail::unframe(key, "k.so", value).payload == content);
  });
  backend.secret_ = "shared secret";
  a.on([&] { memory_cache(key, backend).put(content, "s.so"); });
  const auto signed_value = backend.store.at(cotune::remote_key("mem", key, "s.so"));
  CHECK(signed_value == cotune::detail::frame_entry(key, "s.so", content, "shared secret"));
  CHECK(cotune::detail::unframe(key, "s.so", signed_value, "shared secret").was_signed);
  static_assert(std::is_same_v<cotune::remote_entry_fault, cotune::entry_fault>);
}

TEST_CASE("a remote cache pins through its local cache, fetching first when needed", "[cache][remote_cache]") {
  static_assert(cotune::PinnableCache<memory_cache>);
  memory_backend backend;
  machine a, b;
  a.on([&] { memory_cache(key, backend).put("payload", "p.bin"); });
  b.on([&] {
    memory_cache cache(key, backend);
    auto pin = cache.pin("p.bin");
    REQUIRE(pin);
    CHECK(pin->path() == cotune::file_cache(key).dir() / "p.bin");
    CHECK(backend.gets == 1);
    CHECK(cache.pin("p.bin"));
    CHECK(backend.gets == 1); // the second pin is local
    CHECK_FALSE(cache.pin("absent.bin"));
  });
}

TEST_CASE("a remote hit fills the local cache, and a local hit never asks the backend", "[cache][remote_cache]") {
  memory_backend backend;
  machine a, b;
  a.on([&] { memory_cache(key, backend).put("payload", "p.bin"); });
  CHECK(backend.puts == 1);
  b.on([&] {
    memory_cache cache(key, backend);
    auto path = cache.get_file("p.bin");
    REQUIRE(path);
    CHECK(path->string().starts_with(b.dir.string()));
    CHECK(backend.gets == 1);
    CHECK(cache.get("p.bin") == "payload");
    CHECK(cache.get_file("p.bin") == path);
    CHECK(backend.gets == 1);
    CHECK(cotune::file_cache(key).get("p.bin") == "payload");
  });
}

TEST_CASE("a tampered remote value is refused, counted, and never kept locally", "[cache][remote_cache]") {
  memory_backend backend;
  machine a, b;
  a.on([&] { memory_cache(key, backend).put("payload", "p.bin"); });
  backend.store.begin()->second.back() ^= 1;
  b.on([&] {
    memory_cache cache(key, backend);
    CHECK(!cache.get_file("p.bin"));
    CHECK(!cache.get("p.bin"));
    CHECK(backend.refused == 2);
    CHECK(!b.holds_any_file());
  });
}

TEST_CASE("with a secret, only entries signed with it are used", "[cache][remote_cache]") {
  memory_backend backend;
  machine a, b;
  a.on([&] { memory_cache(key, backend).put("unsigned", "u.bin"); });
  backend.secret_ = "shared secret";
  a.on([&] { memory_cache(key, backend).put("signed", "s.bin"); });
  b.on([&] {
    memory_cache cache(key, backend);
    CHECK(!cache.get("u.bin"));
    CHECK(cache.get("s.bin") == "signed");
    CHECK(backend.refused == 1);
  });
}

TEST_CASE("groups fetch their missing children in one request", "[cache][remote_cache]") {
  memory_backend backend;
  machine a, b;
  a.on([&] {
    memory_cache cache(key, backend);
    cotune::cache_group g;
    for (const char* name : {"k.ptx", "k.cubin", "k.json"}) g.emplace(name, cache.put(name, name));
    cache.put_group("k", g);
  });
  b.on([&] {
    memory_cache cache(key, backend);
    (void)cache.get("k.ptx"); // one child already local
    CHECK(backend.gets == 1);
    auto group = cache.get_group("k");
    REQUIRE(group);
    CHECK(group->size() == 3);
    CHECK(backend.gets == 3); // the group file, then the two missing children together
    for (const auto& [name, path] : *group) CHECK(cotune::file_cache(key).get(name) == name);
    // A second lookup is entirely local.
    CHECK(cache.get_group("k") == group);
    CHECK(backend.gets == 3);
  });
}

TEST_CASE("a group naming an invalid child is foreign", "[cache][remote_cache]") {
  memory_backend backend;
  machine a, b;
  // Planted by someone else with a valid frame (no secret): the child list itself is hostile.
  backend.store[cotune::remote_key("mem", key, "__grp__g.json")] =
      cotune::detail::frame_entry(key, "__grp__g.json", R"({"children": ["ok.bin", "a:b"]})");
  backend.store[cotune::remote_key("mem", key, "__grp__h.json")] =
      cotune::detail::frame_entry(key, "__grp__h.json", "not json");
  b.on([&] {
    memory_cache cache(key, backend);
    CHECK(!cache.get_group("g"));
    CHECK(!cache.get_group("h"));
  });
}

TEST_CASE("a read-only backend is never written, while the local cache still is", "[cache][remote_cache]") {
  memory_backend backend;
  backend.read_only_ = true;
  machine a;
  a.on([&] {
    memory_cache cache(key, backend);
    auto path = cache.put("mine", "m.bin");
    CHECK(fs::exists(path));
    cache.put_group("g", {{"m.bin", path}});
    CHECK(cache.get_group("g"));
  });
  CHECK(backend.puts == 0);
  CHECK(backend.store.empty());
}

TEST_CASE("hostile names are refused before reaching the backend", "[cache][remote_cache]") {
  memory_backend backend;
  machine a;
  a.on([&] {
    memory_cache cache(key, backend);
    for (const std::string& name : std::vector<std::string>{"a:b", "x\r\nDEL y", "two words", "../x"}) {
      CHECK_THROWS_AS(cache.put("x", name), cotune::cache_error);
      CHECK_THROWS_AS((void)cache.get_file(name), cotune::cache_error);
    }
  });
  CHECK(backend.gets == 0);
  CHECK(backend.puts == 0);
  CHECK_THROWS_AS(memory_cache("ABC", backend), cotune::cache_error);
}

TEST_CASE("a remote cache is constructible from a key alone, with the shared backend", "[cache][remote_cache]") {
  machine a;
  a.on([&] {
    memory_cache cache{std::string_view(key)};
    CHECK(&cache.backend() == &memory_backend::shared());
    cache.put("x", "x.bin");
    CHECK(memory_backend::shared().store.count(cotune::remote_key("mem", key, "x.bin")) == 1);
  });
}
