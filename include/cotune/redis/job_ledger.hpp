#pragma once
/// \file A job's ledger in Redis: a hash counting, for each key of the job ("<kernel>|<key text>"), how
/// many times it was measured, by any process. `cotune tune --redis` keeps one per job.
///
/// A key's count is written in the same MULTI/EXEC transaction as its tuning result
/// (redis_backend::ride_with_puts), not after it: a process killed between storing a result and
/// counting it would leave the key measured and uncounted, and a ledger that lists every key exactly
/// once is how a fleet shows that no key was lost or measured twice.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include <cotune/redis/redis_backend.hpp>

namespace cotune::redis {

/// The field a stored entry is counted under: "<kernel>|<key text>" for a tuning result (a file named
/// "<kernel>.autotune.json" whose JSON names its "kernel" and "key"), nothing for anything else
/// (binaries, groups, companions, journals).
[[nodiscard]] inline std::optional<std::string> ledger_field(std::string_view name, std::string_view payload) {
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

/// From now on, every tuning result `backend` stores adds 1 to its field of the hash `ledger`, in the
/// same transaction as the result itself: both are in Redis, or neither is. Replaces any rider the
/// backend had.
inline void count_results_in(redis_backend& backend, std::string ledger) {
  backend.ride_with_puts([ledger = std::move(ledger)](std::string_view, std::string_view name,
                                                      std::string_view payload) -> std::vector<std::string> {
    auto field = ledger_field(name, payload);
    if (!field) return {};
    return {"HINCRBY", ledger, std::move(*field), "1"};
  });
}

} // namespace cotune::redis
