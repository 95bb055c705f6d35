#pragma once
/// \file `cotune::redis::redis_backend`: a `RemoteBackend` over hiredis, with bounded failure.
///
/// - Every command is sent in argv form (`redisCommandArgv`), never as a formatted string, and every
///   remote key is `<prefix>:<hex key>:<file name>` built from validated parts: no input can name
///   another key or smuggle another command.
/// - Connects and commands have timeouts (COTUNE_REDIS_CONNECT_TIMEOUT_MS, COTUNE_REDIS_TIMEOUT_MS).
///   After a failure the backend backs off (COTUNE_REDIS_BACKOFF_MS): every call is then an immediate
///   miss or no-op, so an outage costs one timeout per backoff period, and tuning carries on locally.
///   The operation timeout bounds each wait for the server to make progress (reads through
///   SO_RCVTIMEO; writes are non-blocking, with one bounded poll whenever the socket is full), so a
///   stalled server costs one timeout however large the value, while a slow transfer that keeps
///   moving is not cut. Host name
///   resolution (getaddrinfo) is outside hiredis's connect timeout: where a DNS stall matters, use an
///   IP address or a name in /etc/hosts.
/// - A connection the server closed (restart, idle `timeout`) is replaced at once, once; a new
///   connection that fails starts the backoff.
/// - Values of another Redis type or over COTUNE_REDIS_MAX_VALUE_BYTES are refused by the server-side
///   read itself (one read-only script for all names), so an oversized value is never transferred.
/// - One connection, used by one call at a time (Redis serves one command at a time per connection
///   anyway); calls from coroutines run on a small pool owned by the backend (`async_run`).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdint>
#include <ctime>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <fmt/core.h>
#include <hiredis/hiredis.h>

#include <cotune/cache/remote_backend.hpp>
#include <cotune/cache/entry_frame.hpp>
#include <cotune/cache/remote_cache.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/run_on.hpp>
#include <cotune/redis/redis_knobs.hpp>
#include <cotune/redis/redis_wire.hpp>
#include <cotune/detail/config.hpp>

namespace cotune::redis {

namespace detail {

/// A test's hook: when set, a put sent as a transaction (see `redis_backend::ride_with_puts`) calls it
/// after the server has its SET and its riders queued and before EXEC is sent (a test kills the
/// process there).
inline void (*transaction_midway_hook)() = nullptr;

/// A fenced put (`redis_backend::fence_puts`): KEYS[1] the entry, KEYS[2] the lease; ARGV[1] the value,
/// ARGV[2] the holder's token, ARGV[3..] a rider's command. Stores (and runs the rider) while the lease
/// is the holder's, or when it lapsed and no one stored the entry since; 1 if stored, 0 if fenced off.
inline constexpr std::string_view fenced_put_script =
    "local holder = redis.call('GET', KEYS[2]) "
    "if holder == ARGV[2] or (not holder and redis.call('EXISTS', KEYS[1]) == 0) then "
    "redis.call('SET', KEYS[1], ARGV[1]) "
    "if #ARGV > 2 then redis.call(unpack(ARGV, 3)) end "
    "return 1 end "
    "return 0";

} // namespace detail

/// A command sent with a put (argv form), or an empty one for none; see `redis_backend::ride_with_puts`.
using put_rider = std::function<std::vector<std::string>(std::string_view key, std::string_view name,
                                                         std::string_view payload)>;

/// Everything a backend needs to know; `from_knobs()` reads the current knobs.
struct redis_options {
  redis_endpoint endpoint{};
  std::string prefix = "cotune";
  std::chrono::milliseconds connect_timeout{100};
  std::chrono::milliseconds timeout{1000};
  std::chrono::milliseconds backoff{60000};
  std::size_t max_value_bytes = std::size_t(64) << 20;
  std::string secret{}; ///< empty = entries unsigned
  bool read_only = false;

  /// The options the knobs give now (throws knob_error for an unparsable setting).
  [[nodiscard]] COTUNE_DECL static redis_options from_knobs();

};

/// What a backend has done since it was made (or `reset_stats`); for tests, reports and figures.
struct redis_stats {
  std::uint64_t hits = 0;             ///< values returned by get
  std::uint64_t misses = 0;           ///< names get returned nothing for (absent, refused, or unavailable)
  std::uint64_t refused = 0;          ///< values not used: wrong type or too large here, bad envelope in the cache
  std::uint64_t writes = 0;           ///< values stored
  std::uint64_t skipped_writes = 0;   ///< puts not sent: read-only, or the value is too large
  std::uint64_t errors = 0;           ///< failed connects and commands (I/O error, timeout, error reply)
  std::uint64_t timeouts = 0;         ///< commands that ran past the operation timeout
  std::uint64_t connects = 0;         ///< connection attempts
  std::uint64_t connect_failures = 0; ///< attempts that failed (refused, timed out, AUTH refused)
  std::uint64_t round_trips = 0;      ///< commands sent to the server (AUTH and SELECT included)
  std::uint64_t backoff_skips = 0;    ///< calls answered at once because the backend was backing off
  std::uint64_t fenced_writes = 0;    ///< puts refused because their lease had passed to another (fence_puts)
};

/// A Redis store of remote cache entries. Default-constructed, it follows the knobs at every call
/// (a changed URL or timeout reconnects); constructed from `redis_options`, it keeps those.
/// Thread-safe. Never throws for an unreachable or misbehaving server: those are misses.
class redis_backend {
public:
  /// A backend that reads its settings from `redis_knobs()` at each call.
  redis_backend() = default;
  /// A backend with fixed settings (the prefix is validated: throws cache_error).
  explicit redis_backend(redis_options options) : fixed_(std::move(options)) { validate_remote_prefix(fixed_->prefix); }
  redis_backend(const redis_backend&) = delete;
  redis_backend& operator=(const redis_backend&) = delete;
  COTUNE_DECL ~redis_backend();


  /// The process-wide backend, following the knobs; what `basic_remote_cache<redis_backend>(key)` uses.
  [[nodiscard]] COTUNE_DECL static redis_backend& shared();

  /// The settings in force now.
  [[nodiscard]] redis_options options() const { return fixed_ ? *fixed_ : redis_options::from_knobs(); }
  /// The signing secret (empty = none).
  [[nodiscard]] std::string secret() const {
    return fixed_ ? fixed_->secret : redis_knobs().secret.get().value_or("");
  }
  /// True when this client never writes (entries or leases).
  [[nodiscard]] bool read_only() const { return fixed_ ? fixed_->read_only : redis_knobs().read_only.get(); }

  /// The remote key of (`key`, `name`) under the current prefix (throws cache_error for bad parts).
  [[nodiscard]] std::string remote_key_of(std::string_view key, std::string_view name) const {
    return remote_key(options().prefix, key, name);
  }

  /// The values stored under `key` for `names`, in one round trip; absent, refused (wrong type, too
  /// large) and unavailable ones are missing. Throws cache_error for an invalid key or name.
  [[nodiscard]] COTUNE_DECL remote_values get(std::string_view key, std::span<const std::string> names);

  /// Stores `value` under (`key`, `name`); false when not stored (read-only, too large, unavailable).
  /// Throws cache_error for an invalid key or name.
  COTUNE_DECL bool put(std::string_view key, std::string_view name, std::string_view value);

  /// Deletes the values stored under `key` for `names`, in one round trip; false when not done
  /// (read-only, unavailable). Throws cache_error for an invalid key or name.
  COTUNE_DECL bool erase(std::string_view key, std::span<const std::string> names);

  /// From now on, a put for which `rider` returns a command sends that command with its SET in one
  /// MULTI/EXEC transaction: the server applies both or neither, whatever becomes of this process or
  /// the connection in between. `payload` is the value without its frame (cache/entry_frame.hpp).
  /// `cotune tune` counts each tuning result in its job's ledger this way (redis/job_ledger.hpp).
  /// An empty function removes the rider.
  COTUNE_DECL void ride_with_puts(put_rider rider);

  /// From now on, puts under `key` are fenced by the lease `lease_key` held with `token`: each is stored
  /// (with its rider) in one script, only while the lease is still `token`'s, or when it lapsed and no one
  /// stored that entry since. A holder paused past its lease (a suspended VM, SIGSTOP), whose key another
  /// process took over, then neither overwrites that process's result nor counts the key in a job's ledger
  /// again; its put returns false (counted in `fenced_writes`). The Redis coordination of a tuning
  /// (redis/tuning_coordination.hpp) fences its key while it holds the lease.
  COTUNE_DECL void fence_puts(std::string key, std::string lease_key, std::string token);
  /// Ends the fence `fence_puts` set on `key` with `token` (another holder's fence stays).
  COTUNE_DECL void unfence_puts(std::string_view key, std::string_view token);

  /// Sends one command (argv form, so no argument can be read as another command) and returns the
  /// reply, or nothing when the server is unavailable (backing off, connect failed, I/O error or
  /// timeout). Error replies are returned (and counted). Used by leases; usable for tooling.
  std::optional<redis_reply> command(std::span<const std::string_view> argv) { return execute(options(), argv); }
  std::optional<redis_reply> command(std::initializer_list<std::string_view> argv) {
    return command(std::span<const std::string_view>(argv.begin(), argv.size()));
  }

  /// Runs `f` on the backend's pool and resumes the awaiting coroutine on its own executor with f's
  /// result (or exception). Keeps blocking Redis I/O off the engine's threads.
  template <class F>
  [[nodiscard]] boost::asio::awaitable<std::invoke_result_t<F&>> async_run(F f) {
    return cotune::detail::run_on(pool().get_executor(), std::move(f));
  }

  /// `get` off the caller's thread.
  [[nodiscard]] boost::asio::awaitable<remote_values> async_get(std::string key, std::vector<std::string> names) {
    auto task = [this, key = std::move(key), names = std::move(names)] { return get(key, names); };
    auto op = async_run(std::move(task));
    co_return co_await std::move(op);
  }
  /// `put` off the caller's thread.
  [[nodiscard]] boost::asio::awaitable<bool> async_put(std::string key, std::string name, std::string value) {
    auto task = [this, key = std::move(key), name = std::move(name), value = std::move(value)] {
      return put(key, name, value);
    };
    auto op = async_run(std::move(task));
    co_return co_await std::move(op);
  }

  /// Counts an entry the remote cache refused (bad envelope or signature).
  void count_refused() noexcept { ++refused_; }

  /// A snapshot of the counters.
  [[nodiscard]] COTUNE_DECL redis_stats stats() const noexcept;
  /// Sets every counter to zero.
  COTUNE_DECL void reset_stats() noexcept;

  /// True while calls are answered at once (after a failure, for the backoff period).
  [[nodiscard]] bool backing_off() const { return backing_off_for(options()); }
  /// Ends a backoff now: the next call tries the server again.
  COTUNE_DECL void reset_backoff();
  /// The last failure, for messages ("" if none): what failed, against which server.
  [[nodiscard]] COTUNE_DECL std::string last_error() const;

private:
  using clock = std::chrono::steady_clock;

  COTUNE_DECL void accept(const redis_options& o, const std::string& name, redis_reply&& r, remote_values& found);

  [[nodiscard]] COTUNE_DECL bool backing_off_for(const redis_options& o) const;
  /// True (and counted) when a call must be answered at once because the backend is backing off.
  COTUNE_DECL bool answer_from_backoff(const redis_options& o);

  COTUNE_DECL void fail(const redis_options& o, std::string why);

  [[nodiscard]] bool connected_for(const redis_options& o) const {
    return context_ && context_pid_ == ::getpid() && context_endpoint_ == o.endpoint &&
           context_timeouts_ == std::pair(o.connect_timeout, o.timeout);
  }

  /// Opens a connection for `o` (mutex_ held); on failure, records it and starts the backoff.
  COTUNE_DECL bool connect(const redis_options& o);

  /// One command on `c`; nothing on an I/O error or a timeout (then `send_failure_` says which).
  COTUNE_DECL std::optional<redis_reply> send(redisContext* c, std::span<const std::string_view> argv,
                                  std::chrono::milliseconds timeout);

  /// Writes the pending command without blocking, waiting at most `timeout` each time the socket is
  /// full: a stalled server costs one timeout however large the value. (A blocking write with
  /// SO_SNDTIMEO returns a partial count after each timeout, so a large value would cost several.)
  COTUNE_DECL bool flush(redisContext* c, std::chrono::milliseconds timeout);

  [[nodiscard]] COTUNE_DECL std::shared_ptr<const put_rider> rider_of() const;

  /// The lease fencing puts under `key`, if any: its remote key and the holder's token.
  [[nodiscard]] COTUNE_DECL std::optional<std::pair<std::string, std::string>> fence_of(std::string_view key) const;

  /// Queues one command on `c` (not yet sent); false (with `send_failure_`) when hiredis cannot.
  COTUNE_DECL bool append(redisContext* c, std::span<const std::string_view> argv);

  /// The next reply on `c`; nothing on an I/O error or a timeout (then `send_failure_` says which).
  COTUNE_DECL std::optional<redis_reply> next_reply(redisContext* c);

  /// MULTI, `commands`, EXEC on one connection, in one round trip; EXEC's reply (an array of the
  /// commands' replies, or an error), or nothing when the server is unavailable. The transaction is
  /// retried on a new connection only when the old one failed before MULTI was answered, so that a
  /// transaction the server may have applied is never applied twice.
  COTUNE_DECL std::optional<redis_reply> transact(const redis_options& o, std::span<const std::span<const std::string_view>> commands);

  COTUNE_DECL std::optional<redis_reply> execute(const redis_options& o, std::span<const std::string_view> argv);

  COTUNE_DECL boost::asio::thread_pool& pool();

  std::optional<redis_options> fixed_;
  mutable std::mutex rider_mutex_;
  std::shared_ptr<const put_rider> rider_;
  std::map<std::string, std::pair<std::string, std::string>, std::less<>>
      fences_;                    // key -> (lease, token); rider_mutex_
  std::atomic<int> read_mode_{0}; // 0: EVAL_RO, 1: EVAL, 2: MGET

  std::mutex mutex_; // the connection: one call at a time
  detail::context_ptr context_;
  pid_t context_pid_ = 0;
  redis_endpoint context_endpoint_;
  std::pair<std::chrono::milliseconds, std::chrono::milliseconds> context_timeouts_{};
  struct send_failure {
    bool timed_out = false;
    std::string what;
  } send_failure_; // why the last send failed (mutex_ held)

  mutable std::mutex state_mutex_; // backoff and last error, readable while a call is in flight
  clock::time_point backoff_until_{};
  redis_endpoint backoff_endpoint_;
  std::string last_error_;

  std::mutex pool_mutex_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
  pid_t pool_pid_ = 0;

  std::atomic<std::uint64_t> hits_{0}, misses_{0}, refused_{0}, writes_{0}, skipped_writes_{0}, errors_{0},
      timeouts_{0}, connects_{0}, connect_failures_{0}, round_trips_{0}, backoff_skips_{0}, fenced_writes_{0};
};

static_assert(RemoteBackend<redis_backend>);
static_assert(SharedRemoteBackend<redis_backend>);
static_assert(RemoteRefusalCounter<redis_backend>);
static_assert(AsyncRemoteRunner<redis_backend>);

/// The remote cache over Redis: local file cache first, then Redis (see basic_remote_cache).
using remote_cache = basic_remote_cache<redis_backend>;

static_assert(CacheManager<remote_cache>);
static_assert(CompanionCache<remote_cache>);

} // namespace cotune::redis

#if COTUNE_HEADER_ONLY
#include <cotune/redis/redis_backend.ipp>
#endif
