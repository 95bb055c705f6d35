#pragma once
/// \file A job's ledger in Redis: a hash counting, for each key of the job ("<kernel>|<key text>"), how
/// many times it was measured, by any process. `cotune tune --redis` keeps one per job.
///
/// A key's count is written in the same MULTI/EXEC transaction as its tuning result
/// (redis_backend::ride_with_puts), not after it: a process killed between storing a result and
/// counting it would leave the key measured and uncounted, and a ledger that lists every key exactly
/// once is how a fleet shows that no key was lost or measured twice. A holder paused past its lease is
/// fenced off (redis_backend::fence_puts): its late result is neither stored nor counted.

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
[[nodiscard]] COTUNE_DECL std::optional<std::string> ledger_field(std::string_view name, std::string_view payload);

/// From now on, every tuning result `backend` stores adds 1 to its field of the hash `ledger`, in the
/// same transaction as the result itself: both are in Redis, or neither is. Replaces any rider the
/// backend had.
COTUNE_DECL void count_results_in(redis_backend& backend, std::string ledger);

} // namespace cotune::redis

#if COTUNE_HEADER_ONLY
#include <cotune/redis/job_ledger.ipp>
#endif
