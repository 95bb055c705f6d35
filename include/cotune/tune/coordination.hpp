#pragma once
/// \file How tunings of one key are coordinated across processes (a remote cache may offer it).
///
/// A cache manager type opts in by providing, findable by argument-dependent lookup,
///
///     boost::asio::awaitable<cotune::tuning_coordination>
///     coordinate_tuning(Cache& cache, std::string hex_key, std::function<bool()> result_ready);
///
/// which returns once this process should tune (holding `guard` until its result is stored) or once
/// another process's result is ready. `cotune::redis` implements it with a lease in Redis.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

namespace cotune {

/// The outcome of `coordinate_tuning`.
struct tuning_coordination {
  /// Another process stored the result meanwhile: read it instead of tuning.
  bool result_ready = false;
  /// Held while this process tunes (e.g. a renewed lease); released when destroyed. Null when
  /// coordination was unavailable: then this process tunes on its own.
  std::shared_ptr<void> guard{};
};

/// The cache manager can coordinate tunings across processes.
template <class Cache>
concept CoordinatingCache = requires(Cache& c, std::string key, std::function<bool()> ready) {
  { coordinate_tuning(c, key, ready) } -> std::same_as<boost::asio::awaitable<tuning_coordination>>;
};

} // namespace cotune
