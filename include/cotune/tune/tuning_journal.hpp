#pragma once
/// \file What an interrupted tuning leaves for the next one: the journal of one key's tuning (each
/// candidate recorded as it completes, so a tuning killed midway resumes without measuring it again)
/// and the quarantine of a kernel (candidates that crashed or hung, skipped until the kernel or the
/// toolchain changes). Both live in the tuner's result cache: the journal beside the key's result
/// (its cache key already covers device, toolchain, kernel, knobs, tuning key and candidate list), the
/// quarantine under a key of the toolchain and the kernel alone.

#include <cstddef>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The journal of one key's tuning: a `tuning_result` in progress (format of the stored result, with
/// `not run` for the candidates still to come).
struct tuning_journal {
  [[nodiscard]] static std::string file(const std::string& kernel) { return kernel + ".journal.json"; }

  /// The candidates an earlier run completed, aligned with `pruned`: a slot is filled only where that
  /// run recorded an outcome for the same config at the same position.
  [[nodiscard]] static std::vector<std::optional<candidate_result>> read(const std::optional<std::string>& text,
                                                                          const std::vector<config>& pruned) {
    std::vector<std::optional<candidate_result>> out(pruned.size());
    if (!text) return out;
    auto stored = tuning_result::from_json(*text, /*partial=*/true);
    if (!stored || stored->candidates.size() != pruned.size()) return out;
    for (std::size_t i = 0; i < pruned.size(); ++i) {
      auto& c = stored->candidates[i];
      // Not evaluated by an earlier search: this run's search decides again.
      if (c.status == candidate_status::not_run || c.status == candidate_status::not_evaluated || !(c.cfg == pruned[i]))
        continue;
      c.cfg = pruned[i]; // the user's config, with its hooks
      c.resumed = true;
      out[i] = std::move(c);
    }
    return out;
  }
};

/// Stores the outcomes so far of one key's tuning as its journal in `cache`; returns why it could
/// not, or nothing.
template <class Cache>
std::optional<std::string> write_journal(Cache& cache, const std::string& kernel, const std::string& key_text,
                                         const std::vector<candidate_result>& results) {
  tuning_result partial;
  partial.kernel = kernel;
  partial.key_text = key_text;
  partial.candidates = results;
  try {
    cache.put(partial.json(), tuning_journal::file(kernel));
  } catch (const std::exception& e) {
    return e.what();
  }
  return std::nullopt;
}

/// Candidates of one kernel that crashed or hung in isolation, by config text, with why.
struct quarantine {
  struct entry {
    candidate_status status = candidate_status::crashed;
    std::string reason;
  };
  std::map<std::string, entry> entries;

  [[nodiscard]] static std::string file(const std::string& kernel) { return kernel + ".quarantine.json"; }

  /// The cache key: the backend's fingerprint (toolchain and architecture) and the kernel's digest.
  [[nodiscard]] static std::string key(const std::string& fingerprint, const std::string& kernel_digest) {
    detail::sha256_hasher h;
    h.field("cotune-quarantine").field(version).field(std::to_string(cache_format_version));
    h.field(fingerprint).field(kernel_digest);
    return detail::to_hex(h.digest());
  }

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

  [[nodiscard]] const entry* find(const config& c) const {
    auto it = entries.find(c.text());
    return it == entries.end() ? nullptr : &it->second;
  }

  [[nodiscard]] std::string json() const {
    json_writer w;
    w.begin_object().field("format", 1).key("candidates").begin_array();
    for (const auto& [cfg, e] : entries)
      w.begin_object().field("config", cfg).field("status", to_string(e.status)).field("reason", e.reason).end_object();
    return std::move(w.end_array().end_object()).take() + "\n";
  }

  /// An unreadable quarantine is an empty one (it only ever saves time).
  [[nodiscard]] static quarantine from_json(std::string_view text) {
    quarantine q;
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    simdjson::dom::array list;
    if (parser.parse(text).get(root) != simdjson::SUCCESS || root["candidates"].get_array().get(list) != simdjson::SUCCESS)
      return q;
    for (auto e : list) {
      std::string_view cfg, status, reason;
      if (e["config"].get_string().get(cfg) != simdjson::SUCCESS || e["status"].get_string().get(status) != simdjson::SUCCESS)
        continue;
      auto st = candidate_status_from(status);
      if (!st || (*st != candidate_status::crashed && *st != candidate_status::hung)) continue;
      if (e["reason"].get_string().get(reason) != simdjson::SUCCESS) reason = {};
      q.entries[std::string(cfg)] = {*st, std::string(reason)};
    }
    return q;
  }
};

} // namespace cotune
