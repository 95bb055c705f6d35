// Companion entries over a real redis-server (cache/remote_companion.hpp, cache/local_fill.hpp): a
// tuning result and its winner's binary in one round trip, the fallback when the companion is
// missing, stale or forged, the local fill off the caller's path, and a clean exit with fills pending.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/redis/redis.hpp>

#include "../support/temp_dir.hpp"
#include "redis_server.hpp"

namespace fs = std::filesystem;
using cotune::knobs;
using cotune::redis::redis_backend;
using cotune::redis::remote_cache;

static_assert(cotune::CompanionCache<remote_cache>);
static_assert(!cotune::CompanionCache<cotune::file_cache>); // no remote store: nothing to save

namespace {

const std::string result_key = cotune::detail::sha256_hex("companion test: result key");
const std::string binary_key = cotune::detail::sha256_hex("companion test: binary key");
const std::string other_key = cotune::detail::sha256_hex("companion test: another binary key");

/// One machine's local file cache: caches made inside `on()` live in its directory.
struct machine {
  cotune_test::temp_dir dir{"cotune-companion"};
  template <class F>
  decltype(auto) on(F&& f) {
    auto scope = knobs().cache.dir.scoped(dir.string());
    return f();
  }
  [[nodiscard]] std::optional<std::string> local(const std::string& key, const std::string& name) {
    return on([&] { return cotune::file_cache(key).get(name); });
  }
};

std::uint64_t trips(const redis_backend& b) { return b.stats().round_trips; }

const char* work_code = R"(
extern "C" void companion_work(int* out, int n) {
  volatile int s = 0;
  for (int r = 0; r < COST; ++r) { // COST rounds of one sum: slower, and the same answer whichever config wins
    s = 0;
    for (int i = 0; i < n; ++i) s += i;
  }
  out[0] = s;
}
)";

using remote_tuner = cotune::autotuner<void(int*, int), cotune::host_backend, cotune::host_benchmarker, remote_cache>;

/// The child roles: this program re-runs itself with COTUNE_TEST_COMPANION=<role>; a child does its
/// part, prints what it did, and leaves through exit() (static destructors run: the filler drains).
struct child_role {
  child_role() {
    const char* role = std::getenv("COTUNE_TEST_COMPANION");
    if (!role) return;
    const std::string r = role;
    if (r == "tune") tune();
    if (r == "slow-fills") slow_fills();
    std::exit(90);
  }

  [[noreturn]] static void tune() {
    std::vector<cotune::config> configs{{{"COST", 6}}, {{"COST", 1}}, {{"COST", 3}}};
    remote_tuner tuner{{.name = "companion_work", .code = work_code, .entry = "companion_work"},
                       configs,
                       {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true,
                        .bench = cotune::bench_options{.warmup_ms = 2, .rep_ms = 10}}};
    int out = 0;
    tuner(&out, 3000);
    const auto fills = cotune::local_fills();
    std::printf("measured=%zu cached=%zu round_trips=%llu fills_queued=%llu\n", tuner.measured_tunings(),
                tuner.cached_tunings(), static_cast<unsigned long long>(redis_backend::shared().stats().round_trips),
                static_cast<unsigned long long>(fills.queued));
    std::fflush(stdout);
    std::exit(out == 3000 * 2999 / 2 ? 0 : 3); // fills may still be pending: exit must finish them
  }

  /// A fill longer than the exit drain limit, then one more: exit joins the first and drops the second.
  [[noreturn]] static void slow_fills() {
    const std::string dir = std::getenv("COTUNE_TEST_DIR");
    auto& filler = cotune::detail::local_filler::instance();
    filler.post([dir] {
      std::this_thread::sleep_for(cotune::detail::local_filler::exit_drain_limit + std::chrono::milliseconds(300));
      std::ofstream(dir + "/first") << "written";
    });
    filler.post([dir] { std::ofstream(dir + "/second") << "written"; });
    filler.post([] { throw std::runtime_error("a failed fill is counted, not thrown"); });
    std::exit(0);
  }
} const run_as_child_if_asked;

cotune::detail::process_result run_child(const std::string& role, const std::vector<std::string>& env) {
  std::vector<std::string> all{"COTUNE_TEST_COMPANION=" + role};
  all.insert(all.end(), env.begin(), env.end());
  return cotune::detail::run_process({"/proc/self/exe"}, std::chrono::minutes(2), {}, all);
}

} // namespace

TEST_CASE("an entry and its companion come from Redis in one round trip, and the companion serves its key",
          "[redis][remote_companion]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine writer, reader;
  const std::string object("\x7f" "ELF bytes\0with a nul", 21); // content is opaque, nul included
  writer.on([&] {
    remote_cache(result_key, backend)
        .put_with_companion("{\"winner\": 2}", "k.autotune.json", {binary_key, {{"k.so", object}, {"k.meta", "m"}}});
  });
  reader.on([&] {
    const auto before = trips(backend);
    CHECK(remote_cache(result_key, backend).get_with_companion("k.autotune.json") == "{\"winner\": 2}");
    CHECK(trips(backend) - before == 1);
    // The binary's own key finds its entries without a round trip, and they are the writer's bytes.
    remote_cache binaries(binary_key, backend);
    CHECK(binaries.get("k.meta") == "m");
    auto path = binaries.get_file("k.so"); // a local file is needed at once: written now
    REQUIRE(path);
    CHECK(cotune::detail::read_file(*path).value_or("").starts_with(object)); // a local entry: then its frame
    CHECK(trips(backend) - before == 1);
  });
  // The result and the meta were written to the local cache in the background.
  REQUIRE(cotune::wait_for_local_fills());
  CHECK(reader.local(result_key, "k.autotune.json") == "{\"winner\": 2}");
  CHECK(reader.local(binary_key, "k.meta") == "m");
  CHECK(reader.local(binary_key, "k.so") == object);
  CHECK(cotune::detail::companion_shelf::instance().size() == 0); // written entries leave the shelf
  // From now on the reader needs no round trip at all.
  reader.on([&] {
    const auto before = trips(backend);
    CHECK(remote_cache(result_key, backend).get_with_companion("k.autotune.json") == "{\"winner\": 2}");
    CHECK(remote_cache(binary_key, backend).get("k.so") == object);
    CHECK(trips(backend) == before);
  });
}

TEST_CASE("without a companion (an older writer) the entry is still served and its key is fetched on its own",
          "[redis][remote_companion]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine writer, reader;
  writer.on([&] {
    remote_cache(result_key, backend).put("{\"winner\": 0}", "k.autotune.json");
    remote_cache(binary_key, backend).put("the object", "k.so");
  });
  reader.on([&] {
    const auto before = trips(backend);
    CHECK(remote_cache(result_key, backend).get_with_companion("k.autotune.json") == "{\"winner\": 0}");
    CHECK(remote_cache(binary_key, backend).get("k.so") == "the object");
    CHECK(trips(backend) - before == 2); // the two-step path
  });
  CHECK(backend.stats().refused == 0);
}

TEST_CASE("a companion left from an earlier write of the entry is refused, not used",
          "[redis][remote_companion]") {
  cotune_test::redis_server server;
  redis_backend backend(server.options());
  machine writer, reader;
  writer.on([&] {
    remote_cache results(result_key, backend);
    results.put_with_companion("{\"winner\": 1}", "k.autotune.json", {other_key, {{"k.so", "old winner"}}});
    results.put("{\"winner\": 2}", "k.autotune.json"); // retuned by an older writer: the companion is stale
    remote_cache(binary_key, backend).put("new winner", "k.so");
  });
  reader.on([&] {
    CHECK(remote_cache(result_key, backend).get_with_companion("k.autotune.json") == "{\"winner\": 2}");
    CHECK(backend.stats().refused == 1);
    CHECK(cotune::detail::companion_shelf::instance().size() == 0);
    CHECK(!remote_cache(other_key, backend).get("k.so")); // the stale binary was never shelved
    CHECK(remote_cache(binary_key, backend).get("k.so") == "new winner");
  });
  REQUIRE(cotune::wait_for_local_fills());
}

TEST_CASE("a forged companion never serves a binary under a key it was not written for",
          "[redis][remote_companion]") {
  cotune_test::redis_server server;
  auto signed_options = server.options();
  signed_options.secret = "fleet secret";
  redis_backend backend(signed_options);
  machine writer, reader;
  const std::string result = "{\"winner\": 3}";
  const std::string cname = cotune::detail::companion_name("k.autotune.json");
  writer.on([&] { remote_cache(result_key, backend).put(result, "k.autotune.json"); });
  auto store_companion = [&](const std::string& text) {
    (void)backend.put(result_key, cname, cotune::detail::frame_entry(result_key, cname, text, "fleet secret"));
  };
  auto read_back = [&] {
    reader.on([&] {
      CHECK(remote_cache(result_key, backend).get_with_companion("k.autotune.json") == result);
      CHECK(cotune::detail::companion_shelf::instance().size() == 0);
      CHECK(!remote_cache(binary_key, backend).get("k.so")); // nothing real is stored under it
    });
  };
  const auto digest = cotune::detail::sha256_hex(result);
  SECTION("entries framed under another key, relabelled") {
    std::string text = cotune::detail::encode_companion({other_key, {{"k.so", "forged"}}}, digest, "fleet secret");
    text.replace(text.find(other_key), other_key.size(), binary_key);
    store_companion(text);
    read_back();
  }
  SECTION("entries signed with another secret") {
    store_companion(cotune::detail::encode_companion({binary_key, {{"k.so", "forged"}}}, digest, "not the secret"));
    read_back();
  }
  SECTION("a truncated entry") {
    std::string text = cotune::detail::encode_companion({binary_key, {{"k.so", "forged"}}}, digest, "fleet secret");
    text.pop_back();
    store_companion(text);
    read_back();
  }
  CHECK(backend.stats().refused >= 1);
  REQUIRE(cotune::wait_for_local_fills());
}

TEST_CASE("a new process warm-starts from Redis in one round trip, then from its own disk in none",
          "[redis][remote_companion][processes]") {
  cotune_test::redis_server server;
  cotune_test::temp_dir tuned("cotune-companion-tuned"), empty("cotune-companion-empty");
  const std::string url = "COTUNE_REDIS_URL=" + server.url();
  auto cold = run_child("tune", {url, "COTUNE_CACHE_DIR=" + tuned.string()});
  INFO(cold.output);
  REQUIRE(cold.exit_code == 0);
  REQUIRE_THAT(cold.output, Catch::Contains("measured=1 cached=0"));
  // Another machine: nothing local. The result and the winner's binary come in one request, and
  // the process exits at once, with its local fills possibly still pending.
  auto remote = run_child("tune", {url, "COTUNE_CACHE_DIR=" + empty.string()});
  INFO(remote.output);
  REQUIRE(remote.exit_code == 0);
  CHECK_THAT(remote.output, Catch::Contains("measured=0 cached=1 round_trips=1 fills_queued=1"));
  // The next process on that machine finds both on its disk: Redis is not asked at all.
  auto local = run_child("tune", {url, "COTUNE_CACHE_DIR=" + empty.string()});
  INFO(local.output);
  REQUIRE(local.exit_code == 0);
  CHECK_THAT(local.output, Catch::Contains("measured=0 cached=1 round_trips=0 fills_queued=0"));
}

TEST_CASE("exit finishes a fill in flight and drops the ones past the drain limit, cleanly",
          "[redis][remote_companion][processes]") {
  cotune_test::temp_dir dir("cotune-companion-exit");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_child("slow-fills", {"COTUNE_TEST_DIR=" + dir.string()});
  const auto took = std::chrono::steady_clock::now() - t0;
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.signal == 0);
  CHECK(fs::exists(dir.path() / "first"));   // in flight at the limit: joined, not cut
  CHECK(!fs::exists(dir.path() / "second")); // queued past the limit: dropped
  CHECK(took < std::chrono::seconds(60));    // no hang (the bound is generous: not a timing assertion)
}

TEST_CASE("a failed fill is counted, not thrown", "[redis][remote_companion]") {
  const auto before = cotune::local_fills();
  cotune::detail::local_filler::instance().post([] { throw cotune::cache_error("disk full"); });
  REQUIRE(cotune::wait_for_local_fills());
  const auto after = cotune::local_fills();
  CHECK(after.failed == before.failed + 1);
  CHECK(after.queued == before.queued + 1);
}
