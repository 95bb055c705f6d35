#pragma once
/// \file `cotune::detail::tuned_keys`: an autotuner's table of tuned keys and its single flight
/// (the first caller of a new key runs its tuning job, later callers await that job's result). It
/// knows nothing of the kernel's argument types, so that its coroutine and the co_spawn machinery
/// around it are compiled once per backend, benchmarker and cache, not once per kernel signature.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <cotune/backend/backend.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/read_mostly_map.hpp>
#include <cotune/detail/shared_result.hpp>
#include <cotune/tune/detail/block_on.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/detail/tuning_job.hpp>
#include <cotune/tune/tuning_key.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::detail {

struct tuning_key_hasher {
  std::size_t operator()(const tuning_key& k) const noexcept { return k.hash(); }
};

/// The tuned keys of one autotuner: a lock-free lookup on the hot path, a locked table of flights
/// (tunings in progress) beside it.
template <Backend B, class Bench, CacheManager Cache>
class tuned_keys {
public:
  using job = tuning_job<B, Bench, Cache>;

  /// A tuned key: its winner, loaded on the launch device, and its result.
  struct entry {
    const config* cfg = nullptr;
    typename B::function fn;
    std::shared_ptr<const tuning_result> result;
  };

  [[nodiscard]] entry* find(const tuning_key& key) noexcept { return table_.find(key); }
  [[nodiscard]] const entry* find(const tuning_key& key) const noexcept { return table_.find(key); }

  /// The results of the keys tuned so far, in the order they were tuned (the nearest tuned key of a
  /// new one: tune/key_distance.hpp). A copy, made under a lock: not for the hot path.
  [[nodiscard]] std::vector<std::shared_ptr<const tuning_result>> results() const {
    std::lock_guard lock(flights_mutex_);
    return results_;
  }

  /// The key's entry: found, or awaited from the tuning in flight, or tuned now by the job `make`
  /// makes (the first caller of a key leads; a failure reaches every waiter as its own copy).
  /// (Each awaitable is built in a named variable first: see detail/run_on.hpp for the GCC 12 reason.)
  boost::asio::awaitable<entry*> ensure_tuned(tuning_key key, std::function<std::shared_ptr<job>()> make);

  /// ensure_tuned on the engine's coordinator, the caller blocked until it is done (never call it
  /// from the engine's own threads).
  entry* tune_blocking(engine& eng, const tuning_key& key, std::function<std::shared_ptr<job>()> make);

  /// ensure_tuned started on the engine's coordinator, not awaited (first_call_mode::serve's background
  /// tuning): `done` gets the error, else the entry, there once the tuning has ended.
  void tune_detached(engine& eng, const tuning_key& key, std::function<std::shared_ptr<job>()> make,
                     std::function<void(std::exception_ptr, entry*)> done);

private:
  /// One tuning in progress: its leader sets the outcome, later callers of the key await it.
  using flight = shared_result<entry*>;

  read_mostly_map<tuning_key, entry> table_;
  mutable std::mutex flights_mutex_;
  std::unordered_map<tuning_key, std::shared_ptr<flight>, tuning_key_hasher> flights_;
  std::vector<std::shared_ptr<const tuning_result>> results_; ///< with flights_mutex_

};

template <Backend B, class Bench, CacheManager Cache>
auto tuned_keys<B, Bench, Cache>::ensure_tuned(tuning_key key, std::function<std::shared_ptr<job>()> make)
    -> boost::asio::awaitable<entry*> {
  std::shared_ptr<flight> f;
  bool leader = false;
  {
    std::lock_guard lock(flights_mutex_);
    if (entry* e = table_.find(key)) co_return e;
    auto& slot = flights_[key];
    if (!slot) {
      slot = std::make_shared<flight>(&copy_error); // each waiter throws its own copy of a failure
      leader = true;
    }
    f = slot;
  }
  if (!leader) {
    auto waiting = f->wait();
    co_return co_await std::move(waiting);
  }
  std::exception_ptr error;
  entry* result = nullptr;
  try {
    std::shared_ptr<job> tuning = make();
    auto running = tuning->run();
    auto done = co_await std::move(running);
    const config* best = &done.result->best();
    result = &table_.insert(key, entry{best, std::move(done.fn), std::move(done.result)});
  } catch (...) {
    error = std::current_exception();
  }
  {
    // Leave the table of flights first: a caller arriving after this finds the entry (or, after a
    // failure, starts a new tuning) instead of joining a finished flight.
    std::lock_guard lock(flights_mutex_);
    flights_.erase(key);
    if (result) results_.push_back(result->result);
  }
  if (error) {
    f->set_exception(error);
    std::rethrow_exception(error);
  }
  f->set_value(result);
  co_return result;
}

template <Backend B, class Bench, CacheManager Cache>
auto tuned_keys<B, Bench, Cache>::tune_blocking(engine& eng, const tuning_key& key,
                                                std::function<std::shared_ptr<job>()> make) -> entry* {
  auto tuning = ensure_tuned(key, std::move(make));
  return block_on(eng.coordinator(), std::move(tuning));
}

template <Backend B, class Bench, CacheManager Cache>
void tuned_keys<B, Bench, Cache>::tune_detached(engine& eng, const tuning_key& key,
                                                std::function<std::shared_ptr<job>()> make,
                                                std::function<void(std::exception_ptr, entry*)> done) {
  auto tuning = ensure_tuned(key, std::move(make)); // named: see detail/run_on.hpp
  boost::asio::co_spawn(eng.coordinator(), std::move(tuning), std::move(done));
}

} // namespace cotune::detail
