#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include <cotune/redis/redis_backend.hpp>
#include <cotune/redis/redis_knobs.hpp>

#include "../support/temp_dir.hpp"

using cotune::redis::parse_redis_url;
using cotune::redis::redis_knobs;
using cotune_test::scoped_env;

namespace {

std::vector<cotune::knob_base*> redis_group() {
  auto& k = redis_knobs();
  return {&k.url,       &k.prefix,          &k.connect_timeout_ms, &k.timeout_ms, &k.backoff_ms,
          &k.max_value_bytes, &k.secret, &k.read_only,          &k.lease_ms,   &k.lease_wait_ms};
}

} // namespace

TEST_CASE("the Redis knobs are registered, documented and bounded by default", "[redis][redis_knobs]") {
  auto all = cotune::knob_registry::instance().all();
  for (auto* k : redis_group()) {
    INFO(k->env());
    CHECK(std::find(all.begin(), all.end(), k) != all.end());
    CHECK(k->env().starts_with("COTUNE_"));
    CHECK(k->name().starts_with("redis."));
    CHECK(!k->doc().empty());
    CHECK_FALSE(k->invalidates_caches()); // where entries live and how they are fetched never changes them
  }
  scoped_env a("COTUNE_REDIS_CONNECT_TIMEOUT_MS", std::nullopt), b("COTUNE_REDIS_TIMEOUT_MS", std::nullopt),
      c("COTUNE_REDIS_URL", std::nullopt), d("COTUNE_REMOTE_SECRET", std::nullopt),
      e("COTUNE_REDIS_READ_ONLY", std::nullopt);
  CHECK(redis_knobs().connect_timeout_ms.get() <= 100);
  CHECK(redis_knobs().timeout_ms.get() <= 1000);
  CHECK(redis_knobs().backoff_ms.get() > 0);
  CHECK(redis_knobs().lease_ms.get() >= 3 * redis_knobs().timeout_ms.get());
  CHECK(!redis_knobs().secret.get());
  CHECK_FALSE(redis_knobs().read_only.get());
  auto o = cotune::redis::redis_options::from_knobs();
  CHECK(o.endpoint.host == "127.0.0.1");
  CHECK(o.endpoint.port == 6379);
  CHECK(o.prefix == "cotune");
  CHECK(o.secret.empty());
}

TEST_CASE("redis options follow the knobs and their environment variables", "[redis][redis_knobs]") {
  scoped_env url("COTUNE_REDIS_URL", "redis://cache.example:7000/2");
  scoped_env prefix("COTUNE_REDIS_PREFIX", "team.a");
  scoped_env secret("COTUNE_REMOTE_SECRET", "s3");
  scoped_env read_only("COTUNE_REDIS_READ_ONLY", "yes");
  scoped_env timeout("COTUNE_REDIS_TIMEOUT_MS", "250");
  auto o = cotune::redis::redis_options::from_knobs();
  CHECK(o.endpoint.host == "cache.example");
  CHECK(o.endpoint.port == 7000);
  CHECK(o.endpoint.db == 2);
  CHECK(o.prefix == "team.a");
  CHECK(o.secret == "s3");
  CHECK(o.read_only);
  CHECK(o.timeout == std::chrono::milliseconds(250));
  {
    auto in_code = redis_knobs().prefix.scoped("other");
    CHECK(cotune::redis::redis_options::from_knobs().prefix == "other");
  }
  CHECK(cotune::redis::redis_options::from_knobs().prefix == "team.a");
}

TEST_CASE("bad Redis settings are refused with the variable named", "[redis][redis_knobs]") {
  SECTION("a prefix that could reach other keys") {
    scoped_env prefix("COTUNE_REDIS_PREFIX", "a:b");
    CHECK_THROWS_WITH(cotune::redis::redis_options::from_knobs(), Catch::Contains("COTUNE_REDIS_PREFIX"));
    CHECK_THROWS_AS(redis_knobs().prefix.set("bad prefix"), cotune::knob_error);
  }
  SECTION("a zero timeout") {
    scoped_env timeout("COTUNE_REDIS_TIMEOUT_MS", "0");
    CHECK_THROWS_AS(cotune::redis::redis_options::from_knobs(), cotune::knob_error);
  }
  SECTION("an unusable URL") {
    scoped_env url("COTUNE_REDIS_URL", "http://example.com");
    CHECK_THROWS_WITH(cotune::redis::redis_options::from_knobs(), Catch::Contains("COTUNE_REDIS_URL"));
  }
  SECTION("a non-boolean read-only flag") {
    scoped_env ro("COTUNE_REDIS_READ_ONLY", "maybe");
    CHECK_THROWS_AS(redis_knobs().read_only.get(), cotune::knob_error);
  }
}

TEST_CASE("Redis URLs are parsed", "[redis][redis_knobs]") {
  auto e = parse_redis_url("redis://localhost");
  CHECK(e.host == "localhost");
  CHECK(e.port == 6379);
  CHECK(e.db == 0);
  CHECK(e.password.empty());

  e = parse_redis_url("redis://10.0.0.5:6380/4");
  CHECK(e.host == "10.0.0.5");
  CHECK(e.port == 6380);
  CHECK(e.db == 4);

  e = parse_redis_url("redis://:p%40ss@h:1");
  CHECK(e.user.empty());
  CHECK(e.password == "p@ss");
  CHECK(e.port == 1);

  e = parse_redis_url("redis://alice:pw@h");
  CHECK(e.user == "alice");
  CHECK(e.password == "pw");

  e = parse_redis_url("redis://pw-only@h");
  CHECK(e.password == "pw-only");

  e = parse_redis_url("redis://[::1]:6390");
  CHECK(e.host == "::1");
  CHECK(e.port == 6390);
  CHECK(e.display() == "redis://[::1]:6390");

  e = parse_redis_url("unix:///run/redis/redis.sock");
  CHECK(e.unix_socket);
  CHECK(e.path == "/run/redis/redis.sock");

  CHECK(parse_redis_url("redis://alice:topsecret@h:7/1").display() == "redis://alice:***@h:7/1");
}

TEST_CASE("unusable Redis URLs are refused, without showing the password", "[redis][redis_knobs]") {
  for (const char* url : {"", "http://h", "rediss://h", "redis://", "redis://:6379", "redis://h:0", "redis://h:65536",
                          "redis://h:12x", "redis://h/x", "redis://[::1", "redis://[::1]x", "unix://relative.sock",
                          "redis://:pw@h:%zz"}) {
    INFO(url);
    CHECK_THROWS_AS(parse_redis_url(url), cotune::knob_error);
  }
  try {
    (void)parse_redis_url("redis://alice:topsecret@h:badport");
    FAIL("accepted a bad port");
  } catch (const cotune::knob_error& e) {
    CHECK(std::string(e.what()).find("topsecret") == std::string::npos);
    CHECK(std::string(e.what()).find("port") != std::string::npos);
  }
  try {
    (void)parse_redis_url("redis://lonepassword@h:badport");
    FAIL("accepted a bad port");
  } catch (const cotune::knob_error& e) {
    CHECK(std::string(e.what()).find("lonepassword") == std::string::npos);
  }
  try {
    (void)parse_redis_url("redis://:p%zz@h");
    FAIL("accepted a bad escape");
  } catch (const cotune::knob_error& e) {
    CHECK(std::string(e.what()).find("p%zz") == std::string::npos);
  }
}
