#pragma once
/// \file Reading and storing one key's tuning result in a CacheManager (asynchronously where the
/// cache can: remote reads and writes then run off the engine's threads).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <cotune/cache/remote_companion.hpp>
#include <cotune/core/config.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The result stored under `file` if it is for exactly `pruned`, in this order; else nothing.
template <class Cache>
boost::asio::awaitable<std::optional<tuning_result>> read_stored_result(Cache& cache, std::string file,
                                                                        const std::vector<config>& pruned) {
  std::optional<std::string> text;
  // A cache that keeps the winner's binary beside the result fetches both at once (one round trip).
  if constexpr (CompanionCache<Cache> && requires { cache.async_get_with_companion(file); }) {
    auto getting = cache.async_get_with_companion(file);
    text = co_await std::move(getting);
  } else if constexpr (CompanionCache<Cache>) {
    text = cache.get_with_companion(file);
  } else if constexpr (requires { cache.async_get(file); }) {
    auto getting = cache.async_get(file);
    text = co_await std::move(getting);
  } else {
    text = cache.get(file);
  }
  if (!text) co_return std::nullopt;
  auto stored = tuning_result::from_json(*text);
  if (!stored || stored->candidates.size() != pruned.size()) co_return std::nullopt;
  for (std::size_t i = 0; i < pruned.size(); ++i)
    if (!(stored->candidates[i].cfg == pruned[i])) co_return std::nullopt;
  co_return stored;
}

/// Stores `result` under `file`, with `winner` (its winner's binary: binary_cache::companion) beside
/// it where the cache keeps companions; returns why it could not, or nothing.
template <class Cache>
boost::asio::awaitable<std::optional<std::string>> store_tuning_result(Cache& cache, std::string file,
                                                                       const tuning_result& result,
                                                                       std::optional<remote_companion> winner = {}) {
  std::optional<std::string> failed;
  try {
    const std::string json = result.json();
    if constexpr (CompanionCache<Cache> && requires { cache.async_put_with_companion(json, file, *winner); }) {
      if (winner) {
        auto putting = cache.async_put_with_companion(json, file, *std::move(winner));
        co_await std::move(putting);
      } else {
        auto putting = cache.async_put(json, file);
        co_await std::move(putting);
      }
    } else if constexpr (CompanionCache<Cache>) {
      if (winner) cache.put_with_companion(json, file, *winner);
      else cache.put(json, file);
    } else if constexpr (requires { cache.async_put(json, file); }) {
      auto putting = cache.async_put(json, file);
      co_await std::move(putting);
    } else {
      cache.put(json, file);
    }
  } catch (const std::exception& e) {
    failed = e.what();
  }
  co_return failed;
}

} // namespace cotune
