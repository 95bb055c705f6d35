#pragma once
/// \file The bodies of tune/tuning_journal.hpp that read JSON (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/tune/tuning_journal.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

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
