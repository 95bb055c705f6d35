#pragma once
/// \file The bodies of tune/tuning_journal.hpp that read JSON (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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
#include <cotune/tune/detail/tuning_journal.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

COTUNE_DECL std::string tuning_journal::file(const std::string& kernel, std::size_t chunk) {
  return kernel + ".journal." + std::to_string(chunk) + ".json";
}

COTUNE_DECL std::string tuning_journal::finals_file(const std::string& kernel) { return kernel + ".journal.finals.json"; }

COTUNE_DECL std::string tuning_journal::round_file(const std::string& kernel, std::size_t round) {
  return kernel + ".journal.round." + std::to_string(round) + ".json";
}

COTUNE_DECL std::vector<std::string> tuning_journal::files(const std::string& kernel) {
  std::vector<std::string> out;
  for (std::size_t chunk = 0; chunk < max_chunks; ++chunk) out.push_back(file(kernel, chunk));
  for (std::size_t round = 0; round < max_rounds; ++round) out.push_back(round_file(kernel, round));
  out.push_back(finals_file(kernel));
  return out;
}

COTUNE_DECL std::string tuning_journal::chunk_json(const std::string& kernel, const std::string& key_text,
                                                   const std::vector<candidate_result>& results,
                                                   const std::vector<std::size_t>& indices) {
  tuning_result part;
  part.kernel = kernel;
  part.key_text = key_text;
  part.candidates.reserve(indices.size());
  for (std::size_t i : indices) part.candidates.push_back(results[i]);
  json_writer w;
  w.begin_object().field("format", 1).field("size", results.size()).key("indices").begin_array();
  for (std::size_t i : indices) w.value(i);
  w.end_array().key("outcomes").raw(part.json());
  return std::move(w.end_object()).take() + "\n";
}

COTUNE_DECL std::string tuning_journal::round_json(const std::string& kernel, const std::string& key_text,
                                                   const std::vector<candidate_result>& results,
                                                   const std::vector<std::size_t>& finalists,
                                                   const finals_progress& progress,
                                                   const std::vector<std::size_t>& from, std::size_t rounds,
                                                   const std::string& run) {
  json_writer w;
  w.begin_object().field("format", 1).field("kernel", kernel).field("key", key_text).field("size", results.size());
  w.field("run", run).field("round", progress.rounds_done - 1).field("rounds", rounds).key("finalists").begin_array();
  for (std::size_t k = 0; k < finalists.size(); ++k) {
    w.begin_object().field("index", finalists[k]).field("config", results.at(finalists[k]).cfg.text());
    if (const auto& failed = progress.failures.at(k)) {
      w.field("status", to_string(failed->status)).field("reason", failed->reason).end_object();
      continue;
    }
    const auto& all = progress.samples.at(k);
    std::vector<double> round(all.begin() + static_cast<std::ptrdiff_t>(std::min(from.at(k), all.size())), all.end());
    // A round of more than max_round_count samples stands for that many (its statistics are the same).
    w.field("count", std::min(round.size(), max_round_count)).key("samples").begin_array();
    if (round.size() <= max_round_samples) {
      for (double x : round) w.value(x);
    } else { // evenly spaced order statistics, each standing for count / max_round_samples samples
      std::sort(round.begin(), round.end());
      for (std::size_t j = 0; j < max_round_samples; ++j)
        w.value(round[(2 * j + 1) * round.size() / (2 * max_round_samples)]);
    }
    w.end_array().end_object();
  }
  return std::move(w.end_array().end_object()).take() + "\n";
}

COTUNE_DECL bool tuning_journal::take_round(const std::string& text, const std::vector<config>& pruned,
                                            const std::vector<std::size_t>& finalists, std::size_t round,
                                            std::size_t rounds, std::string& run, finals_progress& progress) {
  using simdjson::SUCCESS;
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::dom::array list;
  std::uint64_t format = 0, size = 0, at = 0, of = 0;
  if (parser.parse(text).get(root) != SUCCESS || root["format"].get_uint64().get(format) != SUCCESS || format != 1 ||
      root["size"].get_uint64().get(size) != SUCCESS || size != pruned.size() ||
      root["round"].get_uint64().get(at) != SUCCESS || at != round || root["rounds"].get_uint64().get(of) != SUCCESS ||
      of != rounds || root["finalists"].get_array().get(list) != SUCCESS || list.size() != finalists.size())
    return false;
  // Every round of one run of the finals: an earlier run's later rounds are not this run's.
  std::string_view id;
  if (root["run"].get_string().get(id) != SUCCESS || id.empty() || (round > 0 && id != run)) return false;
  finals_progress round_progress(finalists.size());
  std::size_t k = 0;
  for (auto e : list) {
    std::uint64_t index = 0;
    std::string_view cfg, status, reason;
    if (e["index"].get_uint64().get(index) != SUCCESS || index != finalists[k] ||
        e["config"].get_string().get(cfg) != SUCCESS || cfg != pruned[finalists[k]].text())
      return false;
    if (e["status"].get_string().get(status) == SUCCESS) {
      const auto st = candidate_status_from(status);
      if (!st || *st == candidate_status::ok || *st == candidate_status::not_run ||
          *st == candidate_status::not_evaluated || e["reason"].get_string().get(reason) != SUCCESS)
        return false;
      round_progress.failures[k++] = final_failure{*st, std::string(reason)};
      continue;
    }
    std::uint64_t count = 0;
    simdjson::dom::array samples;
    // A count beyond what one round can take (a damaged or forged file) would expand to that many samples.
    if (e["count"].get_uint64().get(count) != SUCCESS || e["samples"].get_array().get(samples) != SUCCESS ||
        count > max_round_count)
      return false;
    std::vector<double> stored;
    for (auto x : samples) {
      double v = 0;
      if (x.get_double().get(v) != SUCCESS || !(v >= 0) || !std::isfinite(v)) return false;
      stored.push_back(v);
    }
    // All of them, or `max_round_samples` order statistics standing for `count` samples.
    if (stored.size() != std::min<std::uint64_t>(count, max_round_samples)) return false;
    auto& out = round_progress.samples[k++];
    for (std::size_t j = 0; j < stored.size(); ++j) {
      const auto copies = (j + 1) * count / stored.size() - j * count / stored.size();
      out.insert(out.end(), copies, stored[j]);
    }
  }
  run = std::string(id);
  for (k = 0; k < finalists.size(); ++k) {
    if (round_progress.failures[k]) {
      progress.failures[k] = std::move(round_progress.failures[k]);
      progress.samples[k].clear();
    } else if (!progress.failures[k]) {
      progress.samples[k].insert(progress.samples[k].end(), round_progress.samples[k].begin(),
                                 round_progress.samples[k].end());
    }
  }
  return true;
}

COTUNE_DECL void tuning_journal::take(const std::string& text, const std::vector<config>& pruned,
                                      std::vector<std::optional<candidate_result>>& out) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::dom::array indices;
  simdjson::dom::element outcomes;
  std::uint64_t size = 0;
  if (parser.parse(text).get(root) != simdjson::SUCCESS || root["size"].get_uint64().get(size) != simdjson::SUCCESS ||
      size != pruned.size() || root["indices"].get_array().get(indices) != simdjson::SUCCESS ||
      root["outcomes"].get(outcomes) != simdjson::SUCCESS)
    return;
  auto stored = tuning_result::from_json(simdjson::minify(outcomes), /*partial=*/true);
  if (!stored || stored->candidates.size() != indices.size()) return;
  std::size_t k = 0;
  for (auto v : indices) {
    auto& c = stored->candidates[k++];
    std::uint64_t i = 0;
    if (v.get_uint64().get(i) != simdjson::SUCCESS || i >= pruned.size() || out[i]) continue;
    // Not evaluated by an earlier search: this run's search decides again.
    if (c.status == candidate_status::not_run || c.status == candidate_status::not_evaluated || !(c.cfg == pruned[i]))
      continue;
    c.cfg = pruned[i]; // the user's config, with its hooks
    c.resumed = true;
    out[i] = std::move(c);
  }
}

COTUNE_DECL std::string quarantine::file(const std::string& kernel) { return kernel + ".quarantine.json"; }

COTUNE_DECL std::string quarantine::key(const std::string& fingerprint, const std::string& kernel_digest) {
  detail::sha256_hasher h;
  h.field("cotune-quarantine").field(version).field(std::to_string(cache_format_version));
  h.field(fingerprint).field(kernel_digest);
  return detail::to_hex(h.digest());
}

COTUNE_DECL const quarantine::entry* quarantine::find(const config& c) const {
  auto it = entries.find(c.text());
  return it == entries.end() ? nullptr : &it->second;
}

COTUNE_DECL std::string quarantine::json() const {
  json_writer w;
  w.begin_object().field("format", 1).key("candidates").begin_array();
  for (const auto& [cfg, e] : entries)
    w.begin_object().field("config", cfg).field("status", to_string(e.status)).field("reason", e.reason).end_object();
  return std::move(w.end_array().end_object()).take() + "\n";
}

COTUNE_DECL quarantine quarantine::from_json(std::string_view text) {
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

} // namespace cotune
