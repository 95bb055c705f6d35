#pragma once
/// \file What an interrupted tuning leaves for the next one: the journal of one key's tuning (each
/// candidate recorded as it completes, so a tuning killed midway resumes without measuring it again)
/// and the quarantine of a kernel (candidates that crashed or hung, skipped until the kernel or the
/// toolchain changes). Both live in the tuner's result cache: the journal beside the key's result
/// (its cache key already covers device, toolchain, kernel, knobs, tuning key and candidate list), the
/// quarantine under a key of the toolchain and the kernel alone.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The journal of one key's tuning, kept as chunks so that recording an outcome costs O(log n), not
/// O(n): chunk L (file `<kernel>.journal.<L>.json`) is rewritten when a binary counter of the writes
/// carries into bit L, and then holds every outcome of the chunks below it plus the new one (each a
/// `tuning_result` in progress with only its own candidates, and their positions). Every outcome is
/// thus rewritten at most log2(writes) + 1 times. A chunk below a rewritten one is left as it was: its
/// outcomes are a subset of the new chunk's, so the union of all chunks is always what was recorded,
/// whenever the writer is killed (each put is atomic). Chunks are written from 0 upwards, so a reader
/// reads them from 0 until the first one missing.
struct tuning_journal {
  [[nodiscard]] static COTUNE_DECL std::string file(const std::string& kernel, std::size_t chunk);
  /// The file of the finals' outcomes (one write, once the finals are measured).
  [[nodiscard]] static COTUNE_DECL std::string finals_file(const std::string& kernel);

  /// The file of the finals' timed round `round` (each finalist's samples in it), written as it ends.
  [[nodiscard]] static COTUNE_DECL std::string round_file(const std::string& kernel, std::size_t round);

  /// The most chunks a journal has: enough for 2^40 writes.
  static constexpr std::size_t max_chunks = 41;
  /// The most rounds of the finals a journal holds (the finals have `final_rounds`, 5).
  static constexpr std::size_t max_rounds = 16;
  /// The most samples a round's file holds per finalist: a round with more is written as this many
  /// evenly spaced order statistics of its samples and their count, and read back as that many
  /// samples (each statistic repeated), so that quantiles of a resumed finals are within 1/4096 in rank.
  static constexpr std::size_t max_round_samples = 4096;
  /// The most samples a round's file may say a finalist took (32 x 4,096: above the host benchmarker's
  /// 100,000 repeats): a file that says more is not read (its round is measured again).
  static constexpr std::size_t max_round_count = 32 * max_round_samples;

  /// Every file a journal of `kernel` may have: its chunks, its rounds and its finals.
  [[nodiscard]] static COTUNE_DECL std::vector<std::string> files(const std::string& kernel);

  /// The candidates earlier runs completed, aligned with `pruned`: a slot is filled only where a run
  /// recorded an outcome for the same config at the same position. A chunk that cannot be parsed is
  /// skipped (its outcomes are measured again); a cache that cannot be read throws `cache_error`.
  template <class Cache>
  [[nodiscard]] static std::vector<std::optional<candidate_result>> read(const Cache& cache, const std::string& kernel,
                                                                          const std::vector<config>& pruned) {
    std::vector<std::optional<candidate_result>> out(pruned.size());
    for (std::size_t chunk = 0; chunk < max_chunks; ++chunk) {
      auto text = cache.get(file(kernel, chunk));
      if (!text) break;
      take(*text, pruned, out);
    }
    return out;
  }

  /// The finals an earlier run completed, aligned with `pruned` (empty slots where it holds none).
  template <class Cache>
  [[nodiscard]] static std::vector<std::optional<candidate_result>>
  read_finals(const Cache& cache, const std::string& kernel, const std::vector<config>& pruned) {
    std::vector<std::optional<candidate_result>> out(pruned.size());
    if (auto text = cache.get(finals_file(kernel))) take(*text, pruned, out);
    return out;
  }

  /// The timed rounds of the finals of exactly `finalists` (positions in `pruned`, in that order) that
  /// earlier runs completed, out of `rounds`: each finalist's samples of those rounds, or its failure.
  /// Nothing when the journal holds no round of these finalists (then the finals are measured whole).
  /// A round whose file is missing, unreadable, of other finalists or of another run of the finals (a
  /// later round an earlier run left, past where this one was killed) ends what is taken. `run` is set
  /// to the run's id (round_json's), for the rounds that go on from these.
  template <class Cache>
  [[nodiscard]] static std::optional<finals_progress>
  read_rounds(const Cache& cache, const std::string& kernel, const std::vector<config>& pruned,
              const std::vector<std::size_t>& finalists, std::size_t rounds, std::string* run = nullptr) {
    finals_progress progress(finalists.size());
    std::string id;
    for (std::size_t round = 0; round < std::min(rounds, max_rounds); ++round) {
      auto text = cache.get(round_file(kernel, round));
      if (!text || !take_round(*text, pruned, finalists, round, rounds, id, progress)) break;
      progress.rounds_done = round + 1;
    }
    if (progress.rounds_done == 0) return std::nullopt;
    if (run) *run = id;
    return progress;
  }

  /// Round `progress.rounds_done - 1`'s text (of `rounds`, of the finals' run `run`, an id that every
  /// round of one run of the finals shares, resumed rounds included): the finalists (positions and
  /// configs, of `results`), the samples each took in that round (those of `progress.samples[k]` from
  /// `from[k]` on) and the failures so far.
  [[nodiscard]] static COTUNE_DECL std::string
  round_json(const std::string& kernel, const std::string& key_text, const std::vector<candidate_result>& results,
             const std::vector<std::size_t>& finalists, const finals_progress& progress,
             const std::vector<std::size_t>& from, std::size_t rounds, const std::string& run);

  /// One chunk's text: the candidates at `indices` of `results`.
  [[nodiscard]] static COTUNE_DECL std::string chunk_json(const std::string& kernel, const std::string& key_text,
                                                          const std::vector<candidate_result>& results,
                                                          const std::vector<std::size_t>& indices);

private:
  /// Adds the outcomes of one chunk to `out` (slots already filled stay as they are).
  static void take(const std::string& text, const std::vector<config>& pruned,
                   std::vector<std::optional<candidate_result>>& out);
  /// Adds round `round`'s samples and failures to `progress`; false, and nothing added, for a text that
  /// is not that round of exactly these finalists.
  /// `run`: the run's id, taken from round 0 (empty before it) and required of the later rounds.
  static COTUNE_DECL bool take_round(const std::string& text, const std::vector<config>& pruned,
                                     const std::vector<std::size_t>& finalists, std::size_t round, std::size_t rounds,
                                     std::string& run, finals_progress& progress);
};

/// Records one key's outcomes as they complete (see `tuning_journal`). The first write also records
/// the outcomes this run resumed from an earlier journal, so that no chunk it overwrites loses them.
class journal_writer {
public:
  journal_writer(std::string kernel, std::string key_text) : kernel_(std::move(kernel)), key_text_(std::move(key_text)) {}

  /// Records `results[index]` (and, on the first write, every resumed outcome) in `cache`; returns why
  /// it could not, or nothing.
  template <class Cache>
  std::optional<std::string> record(Cache& cache, const std::vector<candidate_result>& results, std::size_t index) {
    std::size_t chunk = 0;
    while (chunk < live_.size() && !live_[chunk].empty()) ++chunk;
    if (chunk >= tuning_journal::max_chunks) return "the journal is full";
    std::vector<std::size_t> merged;
    if (writes_ == 0)
      for (std::size_t i = 0; i < results.size(); ++i)
        if (results[i].resumed && i != index) merged.push_back(i);
    for (std::size_t below = 0; below < chunk; ++below) merged.insert(merged.end(), live_[below].begin(), live_[below].end());
    merged.push_back(index);
    try {
      cache.put(tuning_journal::chunk_json(kernel_, key_text_, results, merged), tuning_journal::file(kernel_, chunk));
    } catch (const std::exception& e) {
      return e.what();
    }
    if (live_.size() <= chunk) live_.resize(chunk + 1);
    for (std::size_t below = 0; below < chunk; ++below) live_[below].clear();
    outcomes_written_ += merged.size();
    live_[chunk] = std::move(merged);
    ++writes_;
    return std::nullopt;
  }

  /// The key's text the outcomes are recorded under.
  [[nodiscard]] const std::string& key_text() const noexcept { return key_text_; }

  /// Outcomes written so far, counting every rewrite (at most writes x (log2(writes) + 1), plus the resumed).
  [[nodiscard]] std::size_t outcomes_written() const noexcept { return outcomes_written_; }

private:
  std::string kernel_;
  std::string key_text_;
  std::vector<std::vector<std::size_t>> live_; ///< per chunk, the positions it holds (empty: free)
  std::size_t writes_ = 0;
  std::size_t outcomes_written_ = 0;
};

/// Candidates of one kernel that crashed or hung in isolation, by config text, with why.
struct quarantine {
  struct entry {
    candidate_status status = candidate_status::crashed;
    std::string reason;
  };
  std::map<std::string, entry> entries;

  [[nodiscard]] static COTUNE_DECL std::string file(const std::string& kernel);

  /// The cache key: the backend's fingerprint (toolchain and architecture) and the kernel's digest.
  [[nodiscard]] static COTUNE_DECL std::string key(const std::string& fingerprint, const std::string& kernel_digest);

  /// Adds the crashed and hung candidates of `results` and stores the quarantine in `cache` if that
  /// added any; returns why it could not be stored, or nothing.
  template <class Cache>
  std::optional<std::string> add_crashes(Cache& cache, const std::string& kernel,
                                         const std::vector<candidate_result>& results) {
    bool added = false;
    for (const auto& r : results)
      if ((r.status == candidate_status::crashed || r.status == candidate_status::hung) && !find(r.cfg)) {
        entries[r.cfg.text()] = {r.status, r.reason};
        added = true;
      }
    if (!added) return std::nullopt;
    try {
      cache.put(json(), file(kernel));
    } catch (const std::exception& e) {
      return e.what();
    }
    return std::nullopt;
  }

  [[nodiscard]] COTUNE_DECL const entry* find(const config& c) const;

  [[nodiscard]] COTUNE_DECL std::string json() const;

  /// An unreadable quarantine is an empty one (it only ever saves time).
  [[nodiscard]] static quarantine from_json(std::string_view text);
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/tuning_journal.ipp>
#endif
