// Tests for cotune/knobs/knobs.hpp: the core knob groups, their defaults, validators and the registry.

#include <catch2/catch.hpp>
// The modules' knob groups register themselves during static initialisation wherever their headers
// are included; the knob reference test below needs them all.
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_knobs.hpp>
#endif
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis_knobs.hpp>
#endif
#include <cotune/batch/job_knobs.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <cotune/detail/files.hpp>
#include <cotune/knobs/knobs.hpp>

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

using cotune::knob_error;
using cotune::knobs;
using cotune_test::scoped_env;

namespace {

/// Every knob of the core groups, by address.
std::vector<const cotune::knob_base*> core_knobs() {
  auto& k = knobs();
  return {&k.cache.dir,          &k.cache.dump_dir,         &k.cache.override_dir,
          &k.autotuning.cache,   &k.autotuning.print,       &k.autotuning.progress,
          &k.autotuning.compile_threads, &k.autotuning.compile_timeout_ms,
          &k.bench.warmup_ms,    &k.bench.rep_ms,           &k.bench.timeout_ms,
          &k.build.cxx,          &k.build.cxxflags,         &k.runtime.debug};
}

} // namespace

TEST_CASE("the registry lists every core knob once, with unique names and variables", "[knobs]") {
  const auto all = cotune::knob_registry::instance().all();
  std::set<std::string> names, envs;
  for (const auto* k : core_knobs()) {
    INFO(k->name());
    CHECK(std::count(all.begin(), all.end(), k) == 1);
    CHECK(names.insert(k->name()).second);
    CHECK(envs.insert(k->env()).second);
    CHECK_FALSE(k->doc().empty());
    CHECK_FALSE(k->default_text().empty());
    CHECK_FALSE(k->type_name().empty());
  }
  CHECK(names.size() == 14);
}

TEST_CASE("core knobs carry their documented variables, types and defaults", "[knobs]") {
  // The ambient environment must not leak into defaults.
  scoped_env e1("COTUNE_CACHE_AUTOTUNING", std::nullopt), e2("COTUNE_PRINT_AUTOTUNING", std::nullopt),
      e3("COTUNE_PROGRESS", std::nullopt), e4("COTUNE_COMPILE_THREADS", std::nullopt),
      e5("COTUNE_COMPILE_TIMEOUT_MS", std::nullopt), e6("COTUNE_BENCH_WARMUP_MS", std::nullopt),
      e7("COTUNE_BENCH_REP_MS", std::nullopt), e8("COTUNE_BENCH_TIMEOUT_MS", std::nullopt),
      e9("CXX", std::nullopt), e10("COTUNE_HOST_CXXFLAGS", std::nullopt), e11("COTUNE_DEBUG", std::nullopt);
  auto& k = knobs();
  CHECK(k.cache.dir.env() == "COTUNE_CACHE_DIR");
  CHECK(k.cache.dump_dir.env() == "COTUNE_DUMP_DIR");
  CHECK(k.cache.override_dir.env() == "COTUNE_OVERRIDE_DIR");
  CHECK(k.autotuning.cache.env() == "COTUNE_CACHE_AUTOTUNING");
  CHECK(k.autotuning.cache.get() == false);
  CHECK(k.autotuning.print.env() == "COTUNE_PRINT_AUTOTUNING");
  CHECK(k.autotuning.print.get() == false);
  CHECK(k.autotuning.progress.get() == true);
  CHECK(k.autotuning.compile_threads.get() == 0);
  CHECK(k.autotuning.compile_threads.type_name() == "int");
  CHECK(k.autotuning.compile_timeout_ms.get() == 120000);
  CHECK(k.bench.warmup_ms.get() == 25.0);
  CHECK(k.bench.warmup_ms.type_name() == "float");
  CHECK(k.bench.rep_ms.get() == 100.0);
  CHECK(k.bench.timeout_ms.get() == 10000);
  CHECK(k.build.cxx.env() == "CXX");
  CHECK(k.build.cxx.get() == std::nullopt);
  CHECK(k.build.cxx.type_name() == "optional string");
  CHECK(k.build.cxxflags.env() == "COTUNE_HOST_CXXFLAGS");
  CHECK(k.build.cxxflags.get() == "-O3 -march=native");
  CHECK(k.runtime.debug.get() == false);
}

TEST_CASE("only knobs that change generated code invalidate caches", "[knobs]") {
  auto& k = knobs();
  CHECK(k.build.cxxflags.invalidates_caches());
  CHECK(k.runtime.debug.invalidates_caches());
  CHECK_FALSE(k.cache.dir.invalidates_caches());
  CHECK_FALSE(k.autotuning.cache.invalidates_caches());
  CHECK_FALSE(k.autotuning.print.invalidates_caches());
  CHECK_FALSE(k.bench.rep_ms.invalidates_caches());
  // CXX is not listed: the host backend hashes the resolved compiler's identity itself.
  CHECK_FALSE(k.build.cxx.invalidates_caches());
}

TEST_CASE("invalidating_text holds exactly the set invalidating core knobs", "[knobs]") {
  scoped_env flags("COTUNE_HOST_CXXFLAGS", std::nullopt);
  scoped_env debug("COTUNE_DEBUG", std::nullopt);
  scoped_env print("COTUNE_PRINT_AUTOTUNING", std::string("1"));
  auto& reg = cotune::knob_registry::instance();
  CHECK(reg.invalidating_text() == "");
  debug.set(std::string("yes"));
  CHECK(reg.invalidating_text() == "COTUNE_DEBUG=true;");
  auto scope = knobs().build.cxxflags.scoped("-O2");
  CHECK(reg.invalidating_text() == "COTUNE_DEBUG=true;COTUNE_HOST_CXXFLAGS=-O2;");
}

TEST_CASE("validators refuse out-of-range core knob values", "[knobs]") {
  auto& k = knobs();
  {
    scoped_env env("COTUNE_COMPILE_THREADS", std::string("-1"));
    try {
      (void)k.autotuning.compile_threads.get();
      FAIL("COTUNE_COMPILE_THREADS=-1 accepted");
    } catch (const knob_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("COTUNE_COMPILE_THREADS"));
      CHECK_THAT(std::string(e.what()), Catch::Contains("at least 0"));
    }
    env.set(std::string("8"));
    CHECK(k.autotuning.compile_threads.get() == 8);
  }
  CHECK_THROWS_AS(k.autotuning.compile_threads.set(-2), knob_error);
  CHECK_FALSE(k.autotuning.compile_threads.is_set()); // the refused value was not stored
  {
    scoped_env env("COTUNE_COMPILE_TIMEOUT_MS", std::string("-5"));
    CHECK_THROWS_AS(k.autotuning.compile_timeout_ms.get(), knob_error);
  }
  {
    scoped_env env("COTUNE_BENCH_WARMUP_MS", std::string("-0.5"));
    CHECK_THROWS_AS(k.bench.warmup_ms.get(), knob_error);
    env.set(std::string("nan"));
    CHECK_THROWS_AS(k.bench.warmup_ms.get(), knob_error);
  }
  CHECK_THROWS_AS(k.bench.rep_ms.set(std::numeric_limits<double>::quiet_NaN()), knob_error);
  CHECK_THROWS_AS(k.bench.timeout_ms.scoped(-1), knob_error);
  {
    scoped_env env("COTUNE_PROGRESS", std::string("maybe"));
    CHECK_THROWS_AS(k.autotuning.progress.get(), knob_error);
  }
}

TEST_CASE("the cache directory is COTUNE_CACHE_DIR, else $XDG_CACHE_HOME/cotune, else ~/.cache/cotune",
          "[knobs]") {
  auto& dir = knobs().cache.dir;
  scoped_env cache("COTUNE_CACHE_DIR", std::nullopt);
  scoped_env xdg("XDG_CACHE_HOME", std::nullopt);
  scoped_env home("HOME", std::string("/home/someone"));
  CHECK(dir.get() == "/home/someone/.cache/cotune");
  CHECK(knobs().cache.dump_dir.get() == "/home/someone/.cache/cotune-dump");
  CHECK(knobs().cache.override_dir.get() == "/home/someone/.cache/cotune-override");
  xdg.set(std::string(""));
  CHECK(dir.get() == "/home/someone/.cache/cotune"); // empty = unset
  xdg.set(std::string("/xdg"));
  CHECK(dir.get() == "/xdg/cotune");
  cache.set(std::string("/explicit/dir"));
  CHECK(dir.get() == "/explicit/dir");
  {
    auto scope = dir.scoped("/in/code");
    CHECK(dir.get() == "/in/code");
  }
  CHECK(dir.get() == "/explicit/dir");
}

TEST_CASE("the knob reference (docs/knobs.md) lists every knob", "[knobs]") {
  // docs/knobs.md is generated (tools/knob_reference.cpp); the test docs/knob_reference checks it whole.
  const auto readme = cotune::detail::read_file(cotune_test::source_file("docs/knobs.md"));
  REQUIRE(readme);
  for (const auto* k : cotune::knob_registry::instance().all()) {
    if (k->name().starts_with("test.")) continue; // knobs the tests make for themselves
    INFO(k->name() << " (" << k->env() << ")");
    CHECK_THAT(*readme, Catch::Contains("`" + k->env() + "`"));
    CHECK_THAT(*readme, Catch::Contains("`" + k->name() + "`"));
  }
}
