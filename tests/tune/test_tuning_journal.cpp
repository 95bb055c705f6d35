// The chunked journal of one key's tuning (tune/tuning_journal.hpp), on a real file cache: what a
// writer killed after any number of outcomes leaves is exactly what it recorded, a resumed run keeps
// the outcomes it took over, and recording n outcomes rewrites O(n log n) of them, not O(n^2).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cache/file_cache.hpp>
#include <cotune/tune/detail/tuning_journal.hpp>

#include "../support/candidates.hpp"
#include "../support/temp_dir.hpp"

using namespace cotune;

namespace {

constexpr const char* key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

using cotune_test::pending;
using cotune_test::space;

void complete(std::vector<candidate_result>& results, std::size_t i) {
  auto& r = results[i];
  if (i % 5 == 3) {
    r.status = candidate_status::compile_error;
    r.reason = "error: candidate " + std::to_string(i);
  } else {
    r.status = candidate_status::ok;
    const double t = 1.0 + static_cast<double>(i) / 1000.0;
    r.time = {t, t * 0.99, t * 1.01};
    r.device = 0;
  }
}

/// Completes candidates [from, to) and records each as it completes, as a tuning does.
void record_range(journal_writer& writer, file_cache& cache, std::vector<candidate_result>& results, std::size_t from,
                  std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    complete(results, i);
    REQUIRE_FALSE(writer.record(cache, results, i).has_value());
  }
}

std::size_t filled(const std::vector<std::optional<candidate_result>>& slots) {
  std::size_t n = 0;
  for (const auto& s : slots) n += s.has_value();
  return n;
}

} // namespace

TEST_CASE("a journal killed after any number of outcomes holds exactly those outcomes", "[tune][journal]") {
  const auto cfgs = space(40);
  // The order in which candidates complete is not their order in the space.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < cfgs.size(); ++i) order.push_back((i * 7) % cfgs.size());
  for (std::size_t killed_after : {1u, 2u, 3u, 7u, 8u, 9u, 16u, 31u, 40u}) {
    cotune_test::temp_dir dir("cotune-journal");
    file_cache cache(dir.path(), key);
    journal_writer writer("k", "n=1");
    auto results = pending(cfgs);
    for (std::size_t w = 0; w < killed_after; ++w) {
      complete(results, order[w]);
      REQUIRE_FALSE(writer.record(cache, results, order[w]).has_value());
    }
    const auto read = tuning_journal::read(cache, "k", cfgs);
    INFO("killed after " << killed_after);
    CHECK(filled(read) == killed_after);
    for (std::size_t w = 0; w < killed_after; ++w) {
      const auto& slot = read[order[w]];
      REQUIRE(slot.has_value());
      CHECK(slot->resumed);
      CHECK(slot->status == results[order[w]].status);
      CHECK(slot->reason == results[order[w]].reason);
      CHECK(slot->time == results[order[w]].time);
    }
  }
}

TEST_CASE("recording n outcomes rewrites each at most log2(n) + 1 times", "[tune][journal]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const std::size_t n = 1000;
  const auto cfgs = space(n);
  auto results = pending(cfgs);
  journal_writer writer("k", "n=1");
  record_range(writer, cache, results, 0, n);
  // A full rewrite per outcome would write n (n + 1) / 2 = 500,500; the chunks write at most n x 11.
  CHECK(writer.outcomes_written() <= n * 11);
  CHECK(writer.outcomes_written() >= n);
  CHECK(filled(tuning_journal::read(cache, "k", cfgs)) == n);
  // The chunks on disk: 0 .. 9 (2^9 < 1000 < 2^10), none above.
  CHECK(cache.get(tuning_journal::file("k", 9)).has_value());
  CHECK_FALSE(cache.get(tuning_journal::file("k", 10)).has_value());
}

TEST_CASE("a resumed run keeps the outcomes it took over when it overwrites the chunks", "[tune][journal]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const auto cfgs = space(20);
  auto first = pending(cfgs);
  journal_writer killed("k", "n=1");
  record_range(killed, cache, first, 0, 7); // chunks 0, 1 and 2 hold 1, 2 and 4 outcomes
  // The second run takes those 7 over, then completes 3 more and is killed too.
  auto resumed = tuning_journal::read(cache, "k", cfgs);
  REQUIRE(filled(resumed) == 7);
  auto second = pending(cfgs);
  for (std::size_t i = 0; i < cfgs.size(); ++i)
    if (resumed[i]) second[i] = *resumed[i];
  journal_writer again("k", "n=1");
  record_range(again, cache, second, 10, 13);
  const auto third = tuning_journal::read(cache, "k", cfgs);
  CHECK(filled(third) == 10);
  for (std::size_t i : {0u, 3u, 6u, 10u, 11u, 12u}) CHECK(third[i].has_value());
  CHECK_FALSE(third[7].has_value());
}

TEST_CASE("a journal of another space, or a damaged chunk, resumes nothing it should not", "[tune][journal]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const auto cfgs = space(8);
  auto results = pending(cfgs);
  journal_writer writer("k", "n=1");
  record_range(writer, cache, results, 0, 3); // chunk 1 holds 0 and 1, chunk 0 holds 2
  SECTION("another space of the same size: no config matches its position") {
    auto other = cfgs;
    std::reverse(other.begin(), other.end());
    CHECK(filled(tuning_journal::read(cache, "k", other)) == 0);
  }
  SECTION("a space of another size") { CHECK(filled(tuning_journal::read(cache, "k", space(9))) == 0); }
  SECTION("chunk 0 damaged: chunk 1 is still read") {
    cache.put("{\"format\": 1, \"size\": 8, \"indices\": [2], \"outcomes\": {\"trunc", tuning_journal::file("k", 0));
    const auto read = tuning_journal::read(cache, "k", cfgs);
    CHECK(filled(read) == 2);
    CHECK(read[0].has_value());
    CHECK(read[1].has_value());
  }
  SECTION("not run and not evaluated outcomes are not taken") {
    results[5].status = candidate_status::not_evaluated;
    REQUIRE_FALSE(writer.record(cache, results, 5).has_value());
    const auto read = tuning_journal::read(cache, "k", cfgs);
    CHECK(filled(read) == 3);
    CHECK_FALSE(read[5].has_value());
  }
}

namespace {

/// Journals rounds [from, to) of finals whose finalist k takes `per_round[k]` samples a round (each
/// round's samples distinct: round * 1000 + k + j / per_round), finalist `fails` (if any) failing in
/// round `fails_in`; returns what was measured. Each round's file is written as the tuning writes it.
finals_progress journal_rounds(file_cache& cache, const std::vector<candidate_result>& results,
                               const std::vector<std::size_t>& finalists, const std::vector<std::size_t>& per_round,
                               std::size_t from, std::size_t to, finals_progress progress,
                               std::optional<std::size_t> fails = std::nullopt, std::size_t fails_in = 0,
                               const std::string& run = "run-1") {
  std::vector<std::size_t> journaled(finalists.size());
  for (std::size_t k = 0; k < finalists.size(); ++k) journaled[k] = progress.samples[k].size();
  for (std::size_t round = from; round < to; ++round) {
    for (std::size_t k = 0; k < finalists.size(); ++k) {
      if (progress.failures[k]) continue;
      if (fails && *fails == k && round == fails_in) {
        progress.failures[k] = final_failure{candidate_status::crashed, "signal 11 in round " + std::to_string(round)};
        continue;
      }
      for (std::size_t j = 0; j < per_round[k]; ++j)
        progress.samples[k].push_back(static_cast<double>(round * 1000 + k) +
                                      static_cast<double>(j) / static_cast<double>(per_round[k]));
    }
    progress.rounds_done = round + 1;
    cache.put(tuning_journal::round_json("k", "n=1", results, finalists, progress, journaled, final_rounds, run),
              tuning_journal::round_file("k", round));
    for (std::size_t k = 0; k < finalists.size(); ++k) journaled[k] = progress.samples[k].size();
  }
  return progress;
}

} // namespace

TEST_CASE("the finals' rounds are journaled as they end: a resumed tuning goes on from the last one",
          "[tune][journal][finals]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const auto cfgs = space(8);
  const auto results = pending(cfgs);
  const std::vector<std::size_t> finalists{5, 1, 6};
  CHECK_FALSE(tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds).has_value());
  // Killed after round 3 of 5: rounds 0, 1 and 2 are in the journal, each finalist's samples in order.
  const auto measured = journal_rounds(cache, results, finalists, {3, 7, 1}, 0, 3, finals_progress(3));
  auto read = tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  REQUIRE(read.has_value());
  CHECK(read->rounds_done == 3);
  CHECK(read->samples == measured.samples);
  CHECK_FALSE(read->failures[0]);
  // The resumed run measures rounds 3 and 4 and journals them after the three it took over: a third
  // run reads all five, as one run that was never killed would have measured them.
  const auto finished = journal_rounds(cache, results, finalists, {3, 7, 1}, 3, 5, *std::move(read));
  const auto again = tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  REQUIRE(again.has_value());
  CHECK(again->rounds_done == 5);
  CHECK(again->samples == finished.samples);
  CHECK(again->samples[1].size() == 5 * 7);
  // Other finalists (another order, another set), another space or another round count: nothing.
  CHECK_FALSE(tuning_journal::read_rounds(cache, "k", cfgs, {1, 5, 6}, final_rounds).has_value());
  CHECK_FALSE(tuning_journal::read_rounds(cache, "k", cfgs, {5, 1}, final_rounds).has_value());
  auto other = cfgs;
  other[6] = config{{"BLOCK", 60}};
  CHECK_FALSE(tuning_journal::read_rounds(cache, "k", other, finalists, final_rounds).has_value());
  CHECK_FALSE(tuning_journal::read_rounds(cache, "k", cfgs, finalists, 4).has_value());
  // A run of the finals that started again from round 0 (run 2) and was killed after round 1: round 2
  // on is an earlier run's, not taken with run 2's.
  (void)journal_rounds(cache, results, finalists, {3, 7, 1}, 0, 2, finals_progress(3), std::nullopt, 0, "run-2");
  const auto restarted = tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  REQUIRE(restarted.has_value());
  CHECK(restarted->rounds_done == 2);
  // A damaged round ends what is taken there; a missing one too, whatever follows it.
  cache.put("{\"format\": 1, \"size\": 8, \"round\": 1, \"rou", tuning_journal::round_file("k", 1));
  const auto cut = tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  REQUIRE(cut.has_value());
  CHECK(cut->rounds_done == 1);
  CHECK(cut->samples[1].size() == 7);
  // Every round file is among the journal's files (deleted with it).
  const auto files = tuning_journal::files("k");
  CHECK(std::find(files.begin(), files.end(), tuning_journal::round_file("k", 4)) != files.end());
}

TEST_CASE("a finalist that failed in a journaled round stays failed, and a large round is kept as order statistics",
          "[tune][journal][finals]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const auto cfgs = space(4);
  const auto results = pending(cfgs);
  const std::vector<std::size_t> finalists{0, 2, 3};
  const std::size_t big = 3 * tuning_journal::max_round_samples + 5;
  const auto measured = journal_rounds(cache, results, finalists, {big, 10, 10}, 0, 2, finals_progress(3), 2, 1);
  const auto read = tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  REQUIRE(read.has_value());
  CHECK(read->rounds_done == 2);
  REQUIRE(read->failures[2].has_value());
  CHECK(read->failures[2]->status == candidate_status::crashed);
  CHECK(read->failures[2]->reason == "signal 11 in round 1");
  CHECK(read->samples[1] == measured.samples[1]);
  // Finalist 0's rounds hold more than the file keeps: as many samples come back, and their quantiles
  // are those of what was measured within 1/4096 in rank.
  REQUIRE(read->samples[0].size() == measured.samples[0].size());
  auto a = measured.samples[0], b = read->samples[0];
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  for (double q : {0.2, 0.5, 0.8}) {
    const auto at = static_cast<std::size_t>(q * static_cast<double>(a.size()));
    const auto lo = a[at - std::min(at, a.size() / 2048)], hi = a[std::min(a.size() - 1, at + a.size() / 2048)];
    CHECK(b[at] >= lo);
    CHECK(b[at] <= hi);
  }
}

TEST_CASE("a round file that claims more samples than a round can take, or a status no finalist has, is not read",
          "[tune][journal][finals]") {
  cotune_test::temp_dir dir("cotune-journal");
  file_cache cache(dir.path(), key);
  const auto cfgs = space(2);
  const std::vector<std::size_t> finalists{0, 1};
  const std::string head =
      R"({"format": 1, "kernel": "k", "key": "n=1", "size": 2, "run": "r", "round": 0, "rounds": 5, "finalists": [)";
  const std::string second = R"({"index": 1, "config": ")" + cfgs[1].text() + R"(", "count": 1, "samples": [1.0]})";
  const std::string zero = R"({"index": 0, "config": ")" + cfgs[0].text() + R"(", )";
  auto stored = [&](const std::string& first) {
    cache.put(head + first + ", " + second + "]}", tuning_journal::round_file("k", 0));
    return tuning_journal::read_rounds(cache, "k", cfgs, finalists, final_rounds);
  };
  // Well formed: read back.
  const auto good = stored(zero + R"("count": 2, "samples": [1.0, 2.0]})");
  REQUIRE(good.has_value());
  CHECK(good->samples[0] == std::vector<double>{1.0, 2.0});
  // 4,096 statistics that claim 2^32 samples would be 32 GiB once expanded: refused, nothing allocated.
  std::string many = zero + R"("count": 4294967296, "samples": [)";
  for (std::size_t j = 0; j < tuning_journal::max_round_samples; ++j) many += j ? ", 1.0" : "1.0";
  CHECK_FALSE(stored(many + "]}").has_value());
  // Just within the bound: expanded to that many.
  std::string bound = zero + R"("count": )" + std::to_string(tuning_journal::max_round_count) + R"(, "samples": [)";
  for (std::size_t j = 0; j < tuning_journal::max_round_samples; ++j) bound += j ? ", 1.0" : "1.0";
  const auto at_bound = stored(bound + "]}");
  REQUIRE(at_bound.has_value());
  CHECK(at_bound->samples[0].size() == tuning_journal::max_round_count);
  // A finalist "not run" or "not evaluated" in the finals is no failure a finals records.
  CHECK_FALSE(stored(zero + R"("status": "not run", "reason": "x"})").has_value());
  CHECK_FALSE(stored(zero + R"("status": "not evaluated", "reason": "x"})").has_value());
  // Negative, non-numeric or missing samples, and a count the samples do not match.
  CHECK_FALSE(stored(zero + R"("count": 1, "samples": [-1.0]})").has_value());
  CHECK_FALSE(stored(zero + R"("count": 1, "samples": ["1"]})").has_value());
  CHECK_FALSE(stored(zero + R"("count": 3, "samples": [1.0]})").has_value());
  CHECK_FALSE(stored(zero + R"("count": 1})").has_value());
}
