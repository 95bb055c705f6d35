#pragma once
/// \file The bodies of redis/job_ledger.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/redis_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/redis/job_ledger.hpp>

namespace cotune::redis {

COTUNE_DECL std::optional<std::string> ledger_field(std::string_view name, std::string_view payload) {
  if (!name.ends_with(".autotune.json") || name.starts_with("__")) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  std::string_view kernel, key;
  if (parser.parse(payload.data(), payload.size()).get(root) != simdjson::SUCCESS ||
      root["kernel"].get_string().get(kernel) != simdjson::SUCCESS ||
      root["key"].get_string().get(key) != simdjson::SUCCESS)
    return std::nullopt;
  if (std::string(kernel) + ".autotune.json" != name) return std::nullopt; // a result filed under another name
  return std::string(kernel) + "|" + std::string(key);
}

COTUNE_DECL void count_results_in(redis_backend& backend, std::string ledger) {
  backend.ride_with_puts([ledger = std::move(ledger)](std::string_view, std::string_view name,
                                                      std::string_view payload) -> std::vector<std::string> {
    auto field = ledger_field(name, payload);
    if (!field) return {};
    return {"HINCRBY", ledger, std::move(*field), "1"};
  });
}

} // namespace cotune::redis
