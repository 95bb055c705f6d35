#pragma once
/// \file `cotune::tuning_recovery`: what one key's tuning reads from an interrupted run and leaves for
/// the next, in the tuner's result cache. It resumes the outcomes the key's journal holds, skips the
/// candidates the kernel's quarantine holds (they crashed or hung before), journals each new outcome
/// as it completes, and adds this run's crashes to the quarantine. The formats are in
/// tune/tuning_journal.hpp; the tuning job (tune/tuning_job.hpp) owns one and emits its warnings.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <unistd.h>

#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/tune/detail/tuning_journal.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// One key's recovery state. Without `recall` (a tuning without a result cache) it resumes nothing,
/// quarantines nothing and journals nothing. A cache that cannot be read (`cache_error`) or written
/// is a warning returned to the caller, not an exception: the tuning goes on without what failed.
template <CacheManager Cache>
class tuning_recovery {
public:
  explicit tuning_recovery(std::string kernel) : kernel_(std::move(kernel)) {}

  /// Reads this key's journal (aligned with `pruned`) and the quarantine of the kernel (under
  /// `fingerprint`, the backend's toolchain and architecture, and `kernel_digest`); outcomes are
  /// journaled into `cache` from now on. A cache that cannot be read is a warning: every candidate is
  /// measured.
  [[nodiscard]] std::optional<std::string> recall(Cache& cache, const std::string& key_text,
                                                  const std::vector<config>& pruned, const std::string& fingerprint,
                                                  const std::string& kernel_digest) {
    journal_.emplace(open_journal{&cache, journal_writer(kernel_, key_text)});
    pruned_ = &pruned;
    try {
      resumed_ = tuning_journal::read(cache, kernel_, pruned);
      finals_ = tuning_journal::read_finals(cache, kernel_, pruned);
      quarantine_cache_.emplace(quarantine::key(fingerprint, kernel_digest));
      if (auto text = quarantine_cache_->get(quarantine::file(kernel_))) quarantine_ = quarantine::from_json(*text);
    } catch (const cache_error& e) {
      return fmt::format("the journal cannot be read ({}); measuring every candidate", e.what());
    }
    return std::nullopt;
  }

  /// Whether an earlier run was interrupted (its journal holds outcomes) or crashed (a quarantine).
  [[nodiscard]] bool crashed_before() const {
    return !quarantine_.entries.empty() ||
           std::any_of(resumed_.begin(), resumed_.end(), [](const auto& r) { return r.has_value(); });
  }

  /// Candidate `i`'s outcome from an interrupted run, or null.
  [[nodiscard]] const candidate_result* resumed(std::size_t i) const {
    return i < resumed_.size() && resumed_[i] ? &*resumed_[i] : nullptr;
  }

  /// The final rounds an interrupted run completed for exactly these `finalists` (each candidate's
  /// outcome, in their order), or nothing: then the finals are measured.
  [[nodiscard]] std::optional<std::vector<candidate_result>> resumed_finals(const std::vector<std::size_t>& finalists) const {
    std::vector<candidate_result> out;
    for (auto i : finalists) {
      if (i >= finals_.size() || !finals_[i] || !resumed(i)) return std::nullopt;
      out.push_back(*finals_[i]);
    }
    // The same finalists and no other: an earlier run with other finalists measured other finals.
    const auto held = std::count_if(finals_.begin(), finals_.end(), [](const auto& f) { return f.has_value(); });
    if (static_cast<std::size_t>(held) != finalists.size()) return std::nullopt;
    return out;
  }

  /// The timed rounds of the finals of exactly these `finalists` (out of `rounds`) that an interrupted
  /// run journaled (each one's samples, or its failure), or nothing: then the finals are measured whole.
  /// Rounds journaled from now on go on after these.
  [[nodiscard]] std::optional<finals_progress> resumed_rounds(const std::vector<std::size_t>& finalists,
                                                              std::size_t rounds) {
    if (!journal_ || !pruned_) return std::nullopt;
    std::optional<finals_progress> out;
    try {
      out = tuning_journal::read_rounds(*journal_->cache, kernel_, *pruned_, finalists, rounds, &round_run_);
    } catch (const std::exception&) { // a cache that cannot be read, or memory: the finals are measured whole
      return std::nullopt;
    }
    if (out) {
      round_finalists_ = finalists;
      round_from_.clear();
      for (const auto& s : out->samples) round_from_.push_back(s.size());
    }
    return out;
  }

  /// Records the round of the finals of `finalists` that `progress` has just completed (its samples
  /// since the previous round this recorded, and the failures so far), so that a tuning killed during
  /// the finals measures only the rounds after it. A failed write is a warning, and the later rounds are
  /// not journaled.
  [[nodiscard]] std::optional<std::string> journal_round(const std::vector<candidate_result>& results,
                                                         const std::vector<std::size_t>& finalists,
                                                         const finals_progress& progress, std::size_t rounds) {
    if (!journal_ || rounds_stopped_ || progress.rounds_done == 0 || progress.rounds_done > tuning_journal::max_rounds)
      return std::nullopt;
    if (progress.rounds_done == 1 || finalists != round_finalists_) { // a run of the finals from its first round
      round_from_.assign(finalists.size(), 0);
      round_run_ = new_run_id();
    }
    round_finalists_ = finalists;
    round_from_.resize(finalists.size(), 0);
    try {
      journal_->cache->put(tuning_journal::round_json(kernel_, journal_->writer.key_text(), results, finalists,
                                                      progress, round_from_, rounds, round_run_),
                           tuning_journal::round_file(kernel_, progress.rounds_done - 1));
    } catch (const std::exception& e) {
      rounds_stopped_ = true; // a later round's file would not be read past the missing one
      return fmt::format("round {} of the finals cannot be journaled ({}); a tuning killed now will measure the "
                         "finals again",
                         progress.rounds_done, e.what());
    }
    for (std::size_t k = 0; k < finalists.size(); ++k) round_from_[k] = progress.samples[k].size();
    return std::nullopt;
  }

  /// Records the finals' outcomes (`results` at `finalists`), so that a run killed before its result is
  /// stored does not measure them again. A failed write is a warning.
  [[nodiscard]] std::optional<std::string> journal_finals(const std::vector<candidate_result>& results,
                                                          const std::vector<std::size_t>& finalists) {
    if (!journal_ || finalists.empty()) return std::nullopt;
    try {
      journal_->cache->put(tuning_journal::chunk_json(kernel_, journal_->writer.key_text(), results, finalists),
                           tuning_journal::finals_file(kernel_));
    } catch (const std::exception& e) {
      return fmt::format("the finals' journal cannot be written ({}); a tuning killed now will measure the finals "
                         "again",
                         e.what());
    }
    return std::nullopt;
  }

  /// Why `c` is quarantined for this kernel, or null.
  [[nodiscard]] const quarantine::entry* quarantined(const config& c) const { return quarantine_.find(c); }

  /// Records `results[index]`, so that a tuning killed midway resumes from here. A journal that cannot
  /// be written is a warning, once, and journaling stops.
  [[nodiscard]] std::optional<std::string> journal(const std::vector<candidate_result>& results, std::size_t index) {
    if (!journal_) return std::nullopt;
    auto failed = journal_->writer.record(*journal_->cache, results, index);
    if (!failed) return std::nullopt;
    journal_.reset();
    return fmt::format("the journal cannot be written ({}); a tuning killed midway will measure every candidate again",
                       *failed);
  }

  /// Adds this run's crashed and hung candidates to the kernel's quarantine.
  [[nodiscard]] std::optional<std::string> remember_crashes(const std::vector<candidate_result>& results) {
    if (!quarantine_cache_) return std::nullopt;
    if (auto failed = quarantine_.add_crashes(*quarantine_cache_, kernel_, results))
      return fmt::format("the quarantine cannot be written ({})", *failed);
    return std::nullopt;
  }

private:
  /// An id for one run of the finals, unique across processes and runs.
  static std::string new_run_id() {
    static std::atomic<std::uint64_t> runs{0};
    return fmt::format("{:x}-{:x}-{:x}", static_cast<std::uint64_t>(::getpid()),
                       std::chrono::steady_clock::now().time_since_epoch().count(), ++runs);
  }

  /// The journal recall() opened: the cache it goes into and the writer with the key's text.
  struct open_journal {
    Cache* cache;
    journal_writer writer;
  };

  std::string kernel_;
  std::vector<std::optional<candidate_result>> resumed_; ///< from an interrupted run's journal
  std::vector<std::optional<candidate_result>> finals_;  ///< its finals' outcomes, if it measured them
  quarantine quarantine_;
  std::optional<Cache> quarantine_cache_;
  std::optional<open_journal> journal_; ///< none before recall(), or once a write failed
  const std::vector<config>* pruned_ = nullptr; ///< the candidates the journal is aligned with (recall's)
  std::vector<std::size_t> round_finalists_;    ///< the finalists whose rounds are being journaled
  std::vector<std::size_t> round_from_;         ///< per finalist, its samples already journaled
  std::string round_run_;                       ///< the id the finals' rounds are journaled under
  bool rounds_stopped_ = false;                 ///< a round's journal could not be written
};

} // namespace cotune
