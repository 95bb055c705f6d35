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
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
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

namespace cotune::redis {

namespace detail {

/// A test's hook: when set, a put sent as a transaction (see `redis_backend::ride_with_puts`) calls it
/// after the server has its SET and its riders queued and before EXEC is sent (a test kills the
/// process there).
inline void (*transaction_midway_hook)() = nullptr;

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
  [[nodiscard]] static redis_options from_knobs() {
    auto& k = redis_knobs();
    redis_options o;
    o.endpoint = parse_redis_url(k.url.get());
    o.prefix = k.prefix.get();
    o.connect_timeout = std::chrono::milliseconds(k.connect_timeout_ms.get());
    o.timeout = std::chrono::milliseconds(k.timeout_ms.get());
    o.backoff = std::chrono::milliseconds(k.backoff_ms.get());
    o.max_value_bytes = static_cast<std::size_t>(k.max_value_bytes.get());
    o.secret = k.secret.get().value_or("");
    o.read_only = k.read_only.get();
    return o;
  }
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
  ~redis_backend() {
    std::unique_ptr<boost::asio::thread_pool> pool;
    {
      std::lock_guard lock(pool_mutex_);
      pool = std::move(pool_);
    }
    if (pool && pool_pid_ == ::getpid()) {
      pool->stop(); // queued calls are dropped; a call in flight ends within the operation timeout
      pool->join();
    }
    else (void)pool.release(); // a pool inherited through fork() has no threads to join
  }

  /// The process-wide backend, following the knobs; what `basic_remote_cache<redis_backend>(key)` uses.
  [[nodiscard]] static redis_backend& shared() {
    static redis_backend instance;
    return instance;
  }

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
  [[nodiscard]] remote_values get(std::string_view key, std::span<const std::string> names) {
    const auto o = options();
    std::vector<std::string> keys;
    keys.reserve(names.size());
    for (const auto& n : names) keys.push_back(remote_key(o.prefix, key, n));
    remote_values found;
    if (names.empty()) return found;
    auto fail_all = [&] {
      misses_ += names.size();
      return found;
    };
    const std::string limit = std::to_string(o.max_value_bytes);
    const std::string count = std::to_string(keys.size());
    for (;;) {
      // EVAL_RO (Redis 7) runs on replicas and under maxmemory; EVAL before 7; plain MGET where
      // scripting is off (some managed servers), without the server-side type and size checks.
      int mode = read_mode_.load();
      std::vector<std::string_view> argv;
      if (mode < 2) {
        argv = {mode == 0 ? "EVAL_RO" : "EVAL", detail::redis_get_script, count};
        argv.insert(argv.end(), keys.begin(), keys.end());
        argv.push_back(limit);
      } else {
        argv = {"MGET"};
        argv.insert(argv.end(), keys.begin(), keys.end());
      }
      auto reply = execute(o, argv);
      if (!reply) return fail_all();
      if (mode < 2 && reply->is_error() && detail::scripting_refused(*reply)) {
        read_mode_.compare_exchange_strong(mode, mode + 1);
        continue;
      }
      if (reply->type != redis_reply::kind::array || reply->elements.size() != names.size()) {
        if (!reply->is_error()) ++errors_; // error replies were counted by execute
        return fail_all();
      }
      for (std::size_t i = 0; i < names.size(); ++i) accept(o, names[i], std::move(reply->elements[i]), found);
      return found;
    }
  }

  /// Stores `value` under (`key`, `name`); false when not stored (read-only, too large, unavailable).
  /// Throws cache_error for an invalid key or name.
  bool put(std::string_view key, std::string_view name, std::string_view value) {
    const auto o = options();
    const auto k = remote_key(o.prefix, key, name);
    if (o.read_only || value.size() > o.max_value_bytes) {
      ++skipped_writes_;
      return false;
    }
    std::vector<std::string> rider;
    if (auto ride = rider_of()) {
      const auto checked = cotune::detail::unframe(key, name, value, o.secret);
      rider = (*ride)(key, name, checked ? checked.payload : value);
    }
    const std::string_view set[] = {"SET", k, value};
    if (rider.empty()) {
      auto reply = execute(o, set);
      if (reply && reply->is_status("OK")) {
        ++writes_;
        return true;
      }
      return false;
    }
    const std::vector<std::string_view> with(rider.begin(), rider.end());
    const std::span<const std::string_view> commands[] = {set, with};
    auto reply = transact(o, commands);
    if (reply && reply->type == redis_reply::kind::array && reply->elements.size() == 2 &&
        reply->elements[0].is_status("OK") && !reply->elements[1].is_error()) {
      ++writes_;
      return true;
    }
    return false;
  }

  /// From now on, a put for which `rider` returns a command sends that command with its SET in one
  /// MULTI/EXEC transaction: the server applies both or neither, whatever becomes of this process or
  /// the connection in between. `payload` is the value without its frame (cache/entry_frame.hpp).
  /// `cotune tune` counts each tuning result in its job's ledger this way (redis/job_ledger.hpp).
  /// An empty function removes the rider.
  void ride_with_puts(put_rider rider) {
    std::lock_guard lock(rider_mutex_);
    rider_ = rider ? std::make_shared<const put_rider>(std::move(rider)) : nullptr;
  }

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
  [[nodiscard]] redis_stats stats() const noexcept {
    redis_stats s;
    s.hits = hits_;
    s.misses = misses_;
    s.refused = refused_;
    s.writes = writes_;
    s.skipped_writes = skipped_writes_;
    s.errors = errors_;
    s.timeouts = timeouts_;
    s.connects = connects_;
    s.connect_failures = connect_failures_;
    s.round_trips = round_trips_;
    s.backoff_skips = backoff_skips_;
    return s;
  }
  /// Sets every counter to zero.
  void reset_stats() noexcept {
    for (auto* c : {&hits_, &misses_, &refused_, &writes_, &skipped_writes_, &errors_, &timeouts_, &connects_,
                    &connect_failures_, &round_trips_, &backoff_skips_})
      c->store(0);
  }

  /// True while calls are answered at once (after a failure, for the backoff period).
  [[nodiscard]] bool backing_off() const { return backing_off_for(options()); }
  /// Ends a backoff now: the next call tries the server again.
  void reset_backoff() {
    std::lock_guard lock(state_mutex_);
    backoff_until_ = {};
  }
  /// The last failure, for messages ("" if none): what failed, against which server.
  [[nodiscard]] std::string last_error() const {
    std::lock_guard lock(state_mutex_);
    return last_error_;
  }

private:
  using clock = std::chrono::steady_clock;

  void accept(const redis_options& o, const std::string& name, redis_reply&& r, remote_values& found) {
    if (r.is_string() && r.str.size() <= o.max_value_bytes) {
      ++hits_;
      found.emplace(name, std::move(r.str));
      return;
    }
    ++misses_;
    if (!r.is_nil()) ++refused_; // another type (-1), too large (-2 or over the limit), or garbage
  }

  [[nodiscard]] bool backing_off_for(const redis_options& o) const {
    std::lock_guard lock(state_mutex_);
    return backoff_endpoint_ == o.endpoint && clock::now() < backoff_until_;
  }

  void fail(const redis_options& o, std::string why) {
    std::lock_guard lock(state_mutex_);
    last_error_ = fmt::format("Redis at {}: {}", o.endpoint.display(), why);
    backoff_endpoint_ = o.endpoint;
    backoff_until_ = clock::now() + o.backoff;
  }

  [[nodiscard]] bool connected_for(const redis_options& o) const {
    return context_ && context_pid_ == ::getpid() && context_endpoint_ == o.endpoint &&
           context_timeouts_ == std::pair(o.connect_timeout, o.timeout);
  }

  /// Opens a connection for `o` (mutex_ held); on failure, records it and starts the backoff.
  bool connect(const redis_options& o) {
    if (context_ && context_pid_ != ::getpid()) (void)context_.release(); // the parent's; leave its socket alone
    context_.reset();
    ++connects_;
    const auto& e = o.endpoint;
    const timeval ctv = detail::to_timeval(o.connect_timeout);
    detail::context_ptr c(e.unix_socket ? ::redisConnectUnixWithTimeout(e.path.c_str(), ctv)
                                        : ::redisConnectWithTimeout(e.host.c_str(), e.port, ctv));
    auto refuse = [&](std::string why) {
      ++connect_failures_;
      ++errors_;
      fail(o, std::move(why));
      return false;
    };
    if (!c) return refuse("cannot allocate a connection");
    if (c->err) return refuse(fmt::format("connect failed: {}", c->errstr));
    if (::redisSetTimeout(c.get(), detail::to_timeval(o.timeout)) != REDIS_OK)
      return refuse(fmt::format("cannot set the operation timeout: {}", c->errstr));
    auto login = [&](std::span<const std::string_view> argv, std::string_view what) {
      auto r = send(c.get(), argv, o.timeout);
      if (!r) return refuse(fmt::format("{} failed: {}", what, send_failure_.what));
      if (r->is_error()) return refuse(fmt::format("{} refused: {}", what, r->str));
      return true;
    };
    if (!e.password.empty()) {
      std::vector<std::string_view> argv{"AUTH"};
      if (!e.user.empty()) argv.push_back(e.user);
      argv.push_back(e.password);
      if (!login(argv, "AUTH")) return false;
    }
    if (e.db != 0) {
      const std::string db = std::to_string(e.db);
      const std::string_view argv[] = {"SELECT", db};
      if (!login(argv, "SELECT")) return false;
    }
    context_ = std::move(c);
    context_pid_ = ::getpid();
    context_endpoint_ = e;
    context_timeouts_ = {o.connect_timeout, o.timeout};
    return true;
  }

  /// One command on `c`; nothing on an I/O error or a timeout (then `send_failure_` says which).
  std::optional<redis_reply> send(redisContext* c, std::span<const std::string_view> argv,
                                  std::chrono::milliseconds timeout) {
    ++round_trips_;
    send_failure_ = {};
    detail::sigpipe_guard guard;
    if (!append(c, argv) || !flush(c, timeout)) return std::nullopt;
    return next_reply(c);
  }

  /// Writes the pending command without blocking, waiting at most `timeout` each time the socket is
  /// full: a stalled server costs one timeout however large the value. (A blocking write with
  /// SO_SNDTIMEO returns a partial count after each timeout, so a large value would cost several.)
  bool flush(redisContext* c, std::chrono::milliseconds timeout) {
    const int flags = ::fcntl(c->fd, F_GETFL);
    if (flags < 0 || ::fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      send_failure_.what = fmt::format("fcntl: {}", std::strerror(errno));
      return false;
    }
    // Without REDIS_BLOCK, hiredis takes EAGAIN from write(2) as "try again later", not as an error.
    c->flags &= ~REDIS_BLOCK;
    bool ok = true;
    for (int done = 0;;) {
      if (::redisBufferWrite(c, &done) != REDIS_OK) {
        send_failure_.what = c->errstr;
        ok = false;
        break;
      }
      if (done) break;
      pollfd p{c->fd, POLLOUT, 0};
      const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (n == 0) {
        send_failure_ = {true, fmt::format("write stalled for {} ms", timeout.count())};
        ok = false;
        break;
      }
      if (n < 0 && errno != EINTR) {
        send_failure_.what = fmt::format("poll: {}", std::strerror(errno));
        ok = false;
        break;
      }
    }
    c->flags |= REDIS_BLOCK;
    (void)::fcntl(c->fd, F_SETFL, flags);
    return ok;
  }

  [[nodiscard]] std::shared_ptr<const put_rider> rider_of() const {
    std::lock_guard lock(rider_mutex_);
    return rider_;
  }

  /// Queues one command on `c` (not yet sent); false (with `send_failure_`) when hiredis cannot.
  bool append(redisContext* c, std::span<const std::string_view> argv) {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (auto a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    if (::redisAppendCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()) == REDIS_OK) return true;
    send_failure_.what = c->err ? c->errstr : "out of memory";
    return false;
  }

  /// The next reply on `c`; nothing on an I/O error or a timeout (then `send_failure_` says which).
  std::optional<redis_reply> next_reply(redisContext* c) {
    void* raw = nullptr;
    errno = 0;
    if (::redisGetReply(c, &raw) != REDIS_OK || !raw) {
      // A blocking hiredis read past SO_RCVTIMEO fails with EAGAIN (EWOULDBLOCK).
      const int e = errno;
      send_failure_.timed_out = c->err == REDIS_ERR_IO && (e == EAGAIN || e == EWOULDBLOCK);
      send_failure_.what = c->err ? c->errstr : "no reply";
      return std::nullopt;
    }
    auto reply = detail::copy_reply(static_cast<redisReply*>(raw));
    ::freeReplyObject(raw);
    return reply;
  }

  /// MULTI, `commands`, EXEC on one connection, in one round trip; EXEC's reply (an array of the
  /// commands' replies, or an error), or nothing when the server is unavailable. The transaction is
  /// retried on a new connection only when the old one failed before MULTI was answered, so that a
  /// transaction the server may have applied is never applied twice.
  std::optional<redis_reply> transact(const redis_options& o, std::span<const std::span<const std::string_view>> commands) {
    if (backing_off_for(o)) {
      ++backoff_skips_;
      return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    if (backing_off_for(o)) {
      ++backoff_skips_;
      return std::nullopt;
    }
    static constexpr std::string_view multi[] = {"MULTI"}, exec[] = {"EXEC"};
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool fresh = false;
      if (!connected_for(o)) {
        if (!connect(o)) return std::nullopt;
        fresh = true;
      }
      redisContext* c = context_.get();
      ++round_trips_;
      send_failure_ = {};
      detail::sigpipe_guard guard;
      bool sent = append(c, multi);
      for (auto command : commands) sent = sent && append(c, command);
      // The server has the transaction queued, not applied: a process killed here leaves nothing.
      sent = sent && flush(c, o.timeout);
      if (sent && detail::transaction_midway_hook) detail::transaction_midway_hook();
      sent = sent && append(c, exec) && flush(c, o.timeout);
      std::optional<redis_reply> reply;
      bool multi_answered = false;
      if (sent) {
        reply = next_reply(c);
        multi_answered = reply.has_value();
        for (std::size_t i = 0; reply && i <= commands.size(); ++i) reply = next_reply(c); // QUEUED..., then EXEC
      }
      if (reply) {
        if (reply->is_error() || reply->type != redis_reply::kind::array) {
          ++errors_;
          std::lock_guard state(state_mutex_);
          last_error_ = fmt::format("Redis at {}: a transaction ({} ...) failed: {}", o.endpoint.display(),
                                    commands.empty() ? std::string_view("EXEC") : commands[0][0],
                                    reply->is_error() ? reply->str : std::string("EXEC was aborted"));
        }
        return reply;
      }
      context_.reset(); // hiredis contexts are unusable after an I/O error
      ++errors_;
      if (send_failure_.timed_out) {
        ++timeouts_;
        fail(o, fmt::format("a transaction timed out after {} ms", o.timeout.count()));
        return std::nullopt;
      }
      if (fresh || multi_answered) {
        fail(o, fmt::format("a transaction failed: {}", send_failure_.what));
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  std::optional<redis_reply> execute(const redis_options& o, std::span<const std::string_view> argv) {
    if (backing_off_for(o)) {
      ++backoff_skips_;
      return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    // A call that waited here behind a failing one must not pay another timeout.
    if (backing_off_for(o)) {
      ++backoff_skips_;
      return std::nullopt;
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool fresh = false;
      if (!connected_for(o)) {
        if (!connect(o)) return std::nullopt;
        fresh = true;
      }
      auto reply = send(context_.get(), argv, o.timeout);
      if (reply) {
        if (reply->is_error()) {
          ++errors_;
          std::lock_guard state(state_mutex_);
          last_error_ = fmt::format("Redis at {}: {} replied: {}", o.endpoint.display(), argv[0], reply->str);
        }
        return reply;
      }
      context_.reset(); // hiredis contexts are unusable after an I/O error
      ++errors_;
      if (send_failure_.timed_out) {
        ++timeouts_;
        fail(o, fmt::format("{} timed out after {} ms", argv[0], o.timeout.count()));
        return std::nullopt;
      }
      if (fresh) {
        fail(o, fmt::format("{} failed: {}", argv[0], send_failure_.what));
        return std::nullopt;
      }
      // An old connection the server closed (restart, idle timeout): one retry on a new one.
    }
    return std::nullopt;
  }

  boost::asio::thread_pool& pool() {
    std::lock_guard lock(pool_mutex_);
    if (pool_ && pool_pid_ != ::getpid()) (void)pool_.release(); // inherited through fork(): its threads are gone
    if (!pool_) {
      // 2 threads: calls share one connection and run one at a time, so more threads would only
      // queue; the second lets a waiting call (or a lease poll) start as soon as the first ends.
      pool_ = std::make_unique<boost::asio::thread_pool>(2);
      pool_pid_ = ::getpid();
    }
    return *pool_;
  }

  std::optional<redis_options> fixed_;
  mutable std::mutex rider_mutex_;
  std::shared_ptr<const put_rider> rider_;
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
      timeouts_{0}, connects_{0}, connect_failures_{0}, round_trips_{0}, backoff_skips_{0};
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
