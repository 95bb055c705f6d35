// What one key's tuning reads from an interrupted run and leaves for the next
// (tune/tuning_recovery.hpp), on real file caches: journaled outcomes come back as resumed,
// crashes come back as quarantined (for the kernel, whatever the key), and a cache that cannot be
// written is one warning, after which nothing more is attempted.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cache/file_cache.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/detail/tuning_recovery.hpp>

#include "../support/candidates.hpp"
#include "../support/temp_dir.hpp"

using namespace cotune;

namespace {

constexpr const char* key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char* other_key = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

using cotune_test::pending;
using cotune_test::space;

void measured(candidate_result& r, double ms) {
  r.status = candidate_status::ok;
  r.time = {ms, ms, ms};
  r.device = 0;
}

void crashed(candidate_result& r) {
  r.status = candidate_status::crashed;
  r.reason = "the benchmark process was killed by signal 11 (SIGSEGV)";
}

} // namespace

TEST_CASE("a fresh key has nothing to resume and nothing quarantined", "[tune][recovery]") {
  cotune_test::temp_dir dir("cotune-recovery");
  // The quarantine lives under the cache directory knob (a key of its own): both caches go there.
  auto root = knobs().cache.dir.scoped(dir.string());
  file_cache cache(key);
  const auto cfgs = space(4);
  tuning_recovery<file_cache> recovery("k");
  CHECK_FALSE(recovery.recall(cache, "n=1", cfgs, "toolchain", "digest").has_value());
  CHECK_FALSE(recovery.crashed_before());
  for (std::size_t i = 0; i < cfgs.size(); ++i) {
    CHECK(recovery.resumed(i) == nullptr);
    CHECK(recovery.quarantined(cfgs[i]) == nullptr);
  }
  CHECK(recovery.resumed(99) == nullptr); // past the end: nothing, not a crash
}

TEST_CASE("outcomes journaled by a killed run are resumed by the next", "[tune][recovery]") {
  cotune_test::temp_dir dir("cotune-recovery");
  // The quarantine lives under the cache directory knob (a key of its own): both caches go there.
  auto root = knobs().cache.dir.scoped(dir.string());
  const auto cfgs = space(5);
  {
    file_cache cache(key);
    tuning_recovery<file_cache> killed("k");
    REQUIRE_FALSE(killed.recall(cache, "n=1", cfgs, "toolchain", "digest").has_value());
    auto results = pending(cfgs);
    measured(results[3], 2.5);
    REQUIRE_FALSE(killed.journal(results, 3).has_value());
    measured(results[1], 1.5);
    REQUIRE_FALSE(killed.journal(results, 1).has_value());
  } // killed here: nothing else is written

  file_cache cache(key);
  tuning_recovery<file_cache> next("k");
  REQUIRE_FALSE(next.recall(cache, "n=1", cfgs, "toolchain", "digest").has_value());
  CHECK(next.crashed_before()); // interrupted: the job may isolate under COTUNE_ISOLATE=auto
  REQUIRE(next.resumed(1) != nullptr);
  REQUIRE(next.resumed(3) != nullptr);
  CHECK(next.resumed(1)->time[0] == 1.5);
  CHECK(next.resumed(3)->time[0] == 2.5);
  CHECK(next.resumed(1)->resumed);
  CHECK(next.resumed(0) == nullptr);
  CHECK(next.resumed(2) == nullptr);
  CHECK(next.resumed(4) == nullptr);
}

TEST_CASE("a crash is quarantined for the kernel and toolchain under any key", "[tune][recovery]") {
  cotune_test::temp_dir dir("cotune-recovery");
  // The quarantine lives under the cache directory knob (a key of its own): both caches go there.
  auto root = knobs().cache.dir.scoped(dir.string());
  const auto cfgs = space(3);
  {
    file_cache cache(key);
    tuning_recovery<file_cache> run("k");
    REQUIRE_FALSE(run.recall(cache, "n=1", cfgs, "toolchain", "digest").has_value());
    auto results = pending(cfgs);
    crashed(results[2]);
    measured(results[0], 1.0);
    REQUIRE_FALSE(run.remember_crashes(results).has_value());
  }
  SECTION("another key of the same kernel skips it") {
    file_cache cache(other_key);
    tuning_recovery<file_cache> next("k");
    REQUIRE_FALSE(next.recall(cache, "n=2", cfgs, "toolchain", "digest").has_value());
    CHECK(next.crashed_before());
    const auto* q = next.quarantined(cfgs[2]);
    REQUIRE(q != nullptr);
    CHECK(q->status == candidate_status::crashed);
    CHECK_THAT(q->reason, Catch::Contains("SIGSEGV"));
    CHECK(next.quarantined(cfgs[0]) == nullptr);
    CHECK(next.resumed(2) == nullptr); // nothing was journaled
  }
  SECTION("another toolchain or kernel source does not") {
    file_cache cache(key);
    tuning_recovery<file_cache> other_toolchain("k"), other_source("k");
    REQUIRE_FALSE(other_toolchain.recall(cache, "n=1", cfgs, "toolchain 2", "digest").has_value());
    REQUIRE_FALSE(other_source.recall(cache, "n=1", cfgs, "toolchain", "digest 2").has_value());
    CHECK(other_toolchain.quarantined(cfgs[2]) == nullptr);
    CHECK(other_source.quarantined(cfgs[2]) == nullptr);
    CHECK_FALSE(other_toolchain.crashed_before());
  }
}

TEST_CASE("without recall nothing is journaled or quarantined", "[tune][recovery]") {
  cotune_test::temp_dir dir("cotune-recovery");
  // The quarantine lives under the cache directory knob (a key of its own): both caches go there.
  auto root = knobs().cache.dir.scoped(dir.string());
  const auto cfgs = space(2);
  tuning_recovery<file_cache> recovery("k"); // a tuning without a result cache
  auto results = pending(cfgs);
  measured(results[0], 1.0);
  crashed(results[1]);
  CHECK_FALSE(recovery.journal(results, 0).has_value());
  CHECK_FALSE(recovery.remember_crashes(results).has_value());

  file_cache cache(key);
  tuning_recovery<file_cache> next("k");
  REQUIRE_FALSE(next.recall(cache, "n=1", cfgs, "toolchain", "digest").has_value());
  CHECK_FALSE(next.crashed_before());
}

TEST_CASE("a journal that cannot be written is one warning and journaling stops", "[tune][recovery]") {
  cotune_test::temp_dir dir("cotune-recovery");
  // The quarantine lives under the cache directory knob (a key of its own): both caches go there.
  auto root = knobs().cache.dir.scoped(dir.string());
  const auto cfgs = space(3);
  // The cache's directory is below a file (ENOTDIR on every write: fails for root too).
  std::ofstream(dir.path() / "a-file") << "not a directory";
  auto blocked = knobs().cache.dir.scoped((dir.path() / "a-file" / "cache").string());
  file_cache cache(key);
  tuning_recovery<file_cache> recovery("k");
  (void)recovery.recall(cache, "n=1", cfgs, "toolchain", "digest"); // reading a missing cache is a miss
  auto results = pending(cfgs);
  measured(results[0], 1.0);
  const auto first = recovery.journal(results, 0);
  REQUIRE(first.has_value());
  CHECK_THAT(*first, Catch::Contains("the journal cannot be written"));
  CHECK_THAT(*first, Catch::Contains("will measure every candidate again"));
  measured(results[1], 1.0);
  CHECK_FALSE(recovery.journal(results, 1).has_value()); // said once
  crashed(results[2]);
  const auto quarantine = recovery.remember_crashes(results);
  REQUIRE(quarantine.has_value());
  CHECK_THAT(*quarantine, Catch::Contains("the quarantine cannot be written"));
}
