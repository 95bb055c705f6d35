#pragma once
/// \file Tuning leases in Redis: one process (on any machine) tunes a key while the others wait for
/// its result, and take over if it dies.
///
/// A lease is `SET <prefix>:lease:<hex key> <token> NX PX <ttl>` ("lease" is not hex, so a lease key
/// never equals an entry key). The holder renews it every third of its lifetime; renewing and
/// releasing are scripts that act only while the stored token is still the holder's, so a holder
/// whose lease expired and was taken over can neither extend nor delete the new holder's lease.
///
/// Typical use (the autotuner's, for one untuned key):
/// \code
///   auto r = cotune::redis::acquire_or_wait(backend, key, [&] { return result_is_in_the_cache(); });
///   switch (r.status) {
///   case lease_status::ready: break;            // another process tuned it: read the result
///   case lease_status::acquired:                // ours: tune, store the result, then r.lease->release()
///   case lease_status::timed_out:               // waited long enough: tune locally
///   case lease_status::unavailable: tune(); ... // no Redis (or read-only): tune locally
///   }
/// \endcode

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <unistd.h>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <cotune/cache/remote_backend.hpp>
#include <cotune/redis/redis_backend.hpp>
#include <cotune/redis/redis_knobs.hpp>

namespace cotune::redis {

/// How a lease is held and waited for.
struct lease_options {
  std::chrono::milliseconds ttl{15000};   ///< lifetime; renewed every ttl / 3 while held
  std::chrono::milliseconds wait{300000}; ///< how long acquire_or_wait waits on another holder
  // 25 ms, doubling to 500 ms: a result that appears quickly (a re-benchmark of cached binaries) is
  // picked up within tens of ms, and a long wait costs each waiter about four round trips a second
  // (each poll asks `ready()`, then tries the lease).
  std::chrono::milliseconds first_poll{25}; ///< first pause between polls
  std::chrono::milliseconds max_poll{500};  ///< longest pause between polls
  bool renew_in_background = true;          ///< a thread renews the lease while it is held

  /// COTUNE_REDIS_LEASE_MS and COTUNE_REDIS_LEASE_WAIT_MS, with the default poll pauses.
  [[nodiscard]] static lease_options from_knobs();
};

/// The remote key of the lease on `hex_key`: `<prefix>:lease:<hex key>` (throws cache_error for bad parts).
[[nodiscard]] inline std::string lease_key(std::string_view prefix, std::string_view hex_key) {
  validate_remote_prefix(prefix);
  validate_remote_key(hex_key);
  return fmt::format("{}:lease:{}", prefix, hex_key);
}

/// A new holder token: `host:pid:<128 random bits>`, unique across machines and readable in Redis.
[[nodiscard]] COTUNE_DECL std::string make_lease_token();

namespace detail {

inline constexpr std::string_view lease_renew_script =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
inline constexpr std::string_view lease_release_script =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// 1: done, 0: the lease is not (or no longer) `token`'s, nothing: Redis did not answer.
[[nodiscard]] COTUNE_DECL std::optional<bool> lease_script(redis_backend& b, std::string_view script, std::string_view key,
                                                      std::string_view token, std::string_view extra = {});

} // namespace detail

struct lease_attempt;

/// A held lease. Destroying (or `release`-ing) it deletes the lease if it is still this holder's.
/// Move-only.
class redis_lease {
public:
  redis_lease(redis_lease&&) noexcept = default;
  COTUNE_DECL redis_lease& operator=(redis_lease&& other) noexcept;
  COTUNE_DECL ~redis_lease();

  /// One attempt to take the lease on `hex_key` (see try_acquire_lease); `answered` tells a lease
  /// held by another (true) from Redis unavailable or a read-only client (false).
  [[nodiscard]] COTUNE_DECL static lease_attempt try_acquire(redis_backend& backend, std::string_view hex_key,
                                                 const lease_options& options);

  /// False once released, or once Redis said the lease is no longer this holder's (it expired and
  /// was taken over). A renewal Redis did not answer leaves it true.
  [[nodiscard]] bool held() const noexcept { return state_ && state_->held.load(); }
  /// This holder's token (what Redis stores under the lease key).
  [[nodiscard]] const std::string& token() const noexcept { return state_->token; }
  /// The lease's remote key.
  [[nodiscard]] const std::string& key() const noexcept { return state_->key; }

  /// Extends the lease to a full lifetime if it is still this holder's; true when Redis confirmed.
  COTUNE_DECL bool renew();

  /// Stops renewing and deletes the lease if it is still this holder's; true when it deleted it.
  COTUNE_DECL bool release();

private:
  struct state {
    redis_backend* backend = nullptr;
    std::string key, token;
    std::chrono::milliseconds ttl{};
    std::atomic<bool> held{true};
    std::mutex mutex;
    std::condition_variable_any wake;
    std::jthread renewer; // last: stopped and joined before the rest is destroyed
  };

  COTUNE_DECL explicit redis_lease(std::unique_ptr<state> s, bool renew_in_background);

  /// Renews; marks the lease lost when Redis says it is another's.
  COTUNE_DECL static bool renew_state(state& st);

  COTUNE_DECL void stop_renewer();

  std::unique_ptr<state> state_;
};

/// What one attempt to take a lease gave.
struct lease_attempt {
  std::optional<redis_lease> lease{}; ///< the lease, when taken
  bool answered = false;              ///< Redis answered (so without a lease, another process holds it)
};


/// Takes the lease on `hex_key` if nobody holds it: the lease, or nothing (held by another, Redis
/// unavailable, or this client read-only).
[[nodiscard]] COTUNE_DECL std::optional<redis_lease> try_acquire_lease(redis_backend& backend, std::string_view hex_key,
                                                                       const lease_options& options = lease_options::from_knobs());

/// The token of the lease's current holder, or nothing (no holder, or Redis unavailable).
[[nodiscard]] COTUNE_DECL std::optional<std::string> lease_holder(redis_backend& backend, std::string_view hex_key);

/// Deletes the lease on `hex_key` only if `token` holds it; true when it deleted it.
COTUNE_DECL bool release_lease(redis_backend& backend, std::string_view hex_key, std::string_view token);

/// How `acquire_or_wait` ended.
enum class lease_status {
  acquired,   ///< this process holds the lease: tune, store the result, release
  ready,      ///< the result is there (another process tuned the key): use it
  timed_out,  ///< another process held the lease for longer than the wait bound: tune locally
  unavailable ///< no lease service (Redis unavailable, or read-only with no holder): tune locally
};

/// What `acquire_or_wait` gives: the status, and the lease when acquired.
struct lease_result {
  lease_status status = lease_status::unavailable;
  std::optional<redis_lease> lease{};
  bool took_over = false; ///< acquired after waiting on a holder that released without a result, or died
};

namespace detail {

/// One poll: the final result, or nothing to keep waiting. `saw_holder` records that someone held it.
template <class Ready>
std::optional<lease_result> lease_poll(redis_backend& b, std::string_view hex_key, Ready& ready,
                                       const lease_options& o, bool& saw_holder) {
  if (ready()) return lease_result{lease_status::ready};
  if (b.read_only()) {
    // Never takes a lease (it would never publish a result), but waits on a holder's.
    auto r = b.command({"EXISTS", lease_key(b.options().prefix, hex_key)});
    if (!r || r->type != redis_reply::kind::integer || r->integer == 0) return lease_result{lease_status::unavailable};
    saw_holder = true;
    return std::nullopt;
  }
  auto attempt = redis_lease::try_acquire(b, hex_key, o);
  if (attempt.lease) {
    // The holder may have published its result and released between our check and our SET.
    if (ready()) {
      attempt.lease->release();
      return lease_result{lease_status::ready};
    }
    return lease_result{lease_status::acquired, std::move(attempt.lease), saw_holder};
  }
  if (!attempt.answered) return lease_result{lease_status::unavailable};
  saw_holder = true;
  return std::nullopt;
}

} // namespace detail

/// Waits until this process may tune `hex_key` or its result is there: checks `ready()` (is the result
/// in the cache?), then tries to take the lease; while another process holds it, polls both (pauses
/// doubling from first_poll to max_poll) until the result appears, the holder's lease ends (released
/// or expired after its death: this process takes over), or `options.wait` passes.
template <class Ready>
  requires std::predicate<Ready&>
[[nodiscard]] lease_result acquire_or_wait(redis_backend& backend, std::string_view hex_key, Ready&& ready,
                                           const lease_options& options = lease_options::from_knobs()) {
  validate_remote_key(hex_key);
  const auto deadline = std::chrono::steady_clock::now() + options.wait;
  auto pause = options.first_poll;
  bool saw_holder = false;
  for (;;) {
    if (auto done = detail::lease_poll(backend, hex_key, ready, options, saw_holder)) return std::move(*done);
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return lease_result{lease_status::timed_out};
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, options.max_poll);
  }
}

/// `acquire_or_wait` for coroutines: each poll (and `ready`) runs on the backend's pool, the pauses
/// are timers on the caller's executor, so no thread blocks while waiting.
[[nodiscard]] COTUNE_DECL boost::asio::awaitable<lease_result>
async_acquire_or_wait(redis_backend& backend, std::string hex_key, std::function<bool()> ready,
                      lease_options options = lease_options::from_knobs());

} // namespace cotune::redis

#if COTUNE_HEADER_ONLY
#include <cotune/redis/redis_lease.ipp>
#endif
