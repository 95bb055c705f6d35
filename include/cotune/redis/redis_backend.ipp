#pragma once
/// \file The bodies of redis/redis_backend.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/redis/redis_backend.hpp>

namespace cotune::redis {

COTUNE_DECL redis_options redis_options::from_knobs() {
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
COTUNE_DECL redis_backend::~redis_backend() {
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
COTUNE_DECL redis_backend& redis_backend::shared() {
  static redis_backend instance;
  return instance;
}

COTUNE_DECL remote_values redis_backend::get(std::string_view key, std::span<const std::string> names) {
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

COTUNE_DECL bool redis_backend::put(std::string_view key, std::string_view name, std::string_view value) {
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
  if (auto fence = fence_of(key)) {
    // In a transaction of its own, so that it is retried only where the server cannot have run it.
    std::vector<std::string_view> eval{"EVAL", detail::fenced_put_script, "2", k, fence->first, value, fence->second};
    eval.insert(eval.end(), rider.begin(), rider.end());
    const std::span<const std::string_view> commands[] = {eval};
    auto reply = transact(o, commands);
    if (!reply) return false;
    const bool one = reply->type == redis_reply::kind::array && reply->elements.size() == 1;
    if (one && reply->elements[0].type == redis_reply::kind::integer) {
      if (reply->elements[0].integer == 1) {
        ++writes_;
        return true;
      }
      ++fenced_writes_;
      return false;
    }
    // A server that runs no scripts (EVAL renamed away, a proxy that refuses it: EXEC aborts, or the
    // script's error) stores the entry unfenced, as before fencing.
    if (!reply->is_error() && !(one && reply->elements[0].is_error())) return false;
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

COTUNE_DECL bool redis_backend::erase(std::string_view key, std::span<const std::string> names) {
  const auto o = options();
  if (o.read_only || names.empty()) return false;
  std::vector<std::string> keys;
  for (const auto& name : names) keys.push_back(remote_key(o.prefix, key, name));
  std::vector<std::string_view> argv{"DEL"};
  argv.insert(argv.end(), keys.begin(), keys.end());
  auto reply = execute(o, argv);
  return reply && reply->type == redis_reply::kind::integer;
}

COTUNE_DECL void redis_backend::fence_puts(std::string key, std::string lease_key, std::string token) {
  std::lock_guard lock(rider_mutex_);
  fences_.insert_or_assign(std::move(key), std::pair(std::move(lease_key), std::move(token)));
}

COTUNE_DECL void redis_backend::unfence_puts(std::string_view key, std::string_view token) {
  std::lock_guard lock(rider_mutex_);
  if (auto it = fences_.find(key); it != fences_.end() && it->second.second == token) fences_.erase(it);
}

COTUNE_DECL std::optional<std::pair<std::string, std::string>> redis_backend::fence_of(std::string_view key) const {
  std::lock_guard lock(rider_mutex_);
  if (auto it = fences_.find(key); it != fences_.end()) return it->second;
  return std::nullopt;
}

COTUNE_DECL void redis_backend::ride_with_puts(put_rider rider) {
  std::lock_guard lock(rider_mutex_);
  rider_ = rider ? std::make_shared<const put_rider>(std::move(rider)) : nullptr;
}

COTUNE_DECL redis_stats redis_backend::stats() const noexcept {
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
  s.fenced_writes = fenced_writes_;
  return s;
}

COTUNE_DECL void redis_backend::reset_stats() noexcept {
  for (auto* c : {&hits_, &misses_, &refused_, &writes_, &skipped_writes_, &errors_, &timeouts_, &connects_,
                  &connect_failures_, &round_trips_, &backoff_skips_, &fenced_writes_})
    c->store(0);
}

COTUNE_DECL void redis_backend::reset_backoff() {
  std::lock_guard lock(state_mutex_);
  backoff_until_ = {};
}

COTUNE_DECL std::string redis_backend::last_error() const {
  std::lock_guard lock(state_mutex_);
  return last_error_;
}

COTUNE_DECL void redis_backend::accept(const redis_options& o, const std::string& name, redis_reply&& r, remote_values& found) {
  if (r.is_string() && r.str.size() <= o.max_value_bytes) {
    ++hits_;
    found.emplace(name, std::move(r.str));
    return;
  }
  ++misses_;
  if (!r.is_nil()) ++refused_; // another type (-1), too large (-2 or over the limit), or garbage
}

COTUNE_DECL bool redis_backend::backing_off_for(const redis_options& o) const {
  std::lock_guard lock(state_mutex_);
  return backoff_endpoint_ == o.endpoint && clock::now() < backoff_until_;
}

COTUNE_DECL bool redis_backend::answer_from_backoff(const redis_options& o) {
  if (!backing_off_for(o)) return false;
  ++backoff_skips_;
  return true;
}

COTUNE_DECL void redis_backend::fail(const redis_options& o, std::string why) {
  std::lock_guard lock(state_mutex_);
  last_error_ = fmt::format(COTUNE_FMT("Redis at {}: {}"), o.endpoint.display(), why);
  backoff_endpoint_ = o.endpoint;
  backoff_until_ = clock::now() + o.backoff;
}

COTUNE_DECL bool redis_backend::connect(const redis_options& o) {
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
  if (c->err) return refuse(fmt::format(COTUNE_FMT("connect failed: {}"), c->errstr));
  if (::redisSetTimeout(c.get(), detail::to_timeval(o.timeout)) != REDIS_OK)
    return refuse(fmt::format(COTUNE_FMT("cannot set the operation timeout: {}"), c->errstr));
  auto login = [&](std::span<const std::string_view> argv, std::string_view what) {
    auto r = send(c.get(), argv, o.timeout);
    if (!r) return refuse(fmt::format(COTUNE_FMT("{} failed: {}"), what, send_failure_.what));
    if (r->is_error()) return refuse(fmt::format(COTUNE_FMT("{} refused: {}"), what, r->str));
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

COTUNE_DECL std::optional<redis_reply> redis_backend::send(redisContext* c, std::span<const std::string_view> argv,
                                std::chrono::milliseconds timeout) {
  ++round_trips_;
  send_failure_ = {};
  detail::sigpipe_guard guard;
  if (!append(c, argv) || !flush(c, timeout)) return std::nullopt;
  return next_reply(c);
}

COTUNE_DECL bool redis_backend::flush(redisContext* c, std::chrono::milliseconds timeout) {
  const int flags = ::fcntl(c->fd, F_GETFL);
  if (flags < 0 || ::fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    send_failure_.what = fmt::format(COTUNE_FMT("fcntl: {}"), std::strerror(errno));
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
      send_failure_ = {true, fmt::format(COTUNE_FMT("write stalled for {} ms"), timeout.count())};
      ok = false;
      break;
    }
    if (n < 0 && errno != EINTR) {
      send_failure_.what = fmt::format(COTUNE_FMT("poll: {}"), std::strerror(errno));
      ok = false;
      break;
    }
  }
  c->flags |= REDIS_BLOCK;
  (void)::fcntl(c->fd, F_SETFL, flags);
  return ok;
}

COTUNE_DECL std::shared_ptr<const put_rider> redis_backend::rider_of() const {
  std::lock_guard lock(rider_mutex_);
  return rider_;
}

COTUNE_DECL bool redis_backend::append(redisContext* c, std::span<const std::string_view> argv) {
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

COTUNE_DECL std::optional<redis_reply> redis_backend::next_reply(redisContext* c) {
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

COTUNE_DECL std::optional<redis_reply> redis_backend::transact(const redis_options& o, std::span<const std::span<const std::string_view>> commands) {
  if (answer_from_backoff(o)) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (answer_from_backoff(o)) return std::nullopt;
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
        last_error_ = fmt::format(COTUNE_FMT("Redis at {}: a transaction ({} ...) failed: {}"), o.endpoint.display(),
                                  commands.empty() ? std::string_view("EXEC") : commands[0][0],
                                  reply->is_error() ? reply->str : std::string("EXEC was aborted"));
      }
      return reply;
    }
    context_.reset(); // hiredis contexts are unusable after an I/O error
    ++errors_;
    if (send_failure_.timed_out) {
      ++timeouts_;
      fail(o, fmt::format(COTUNE_FMT("a transaction timed out after {} ms"), o.timeout.count()));
      return std::nullopt;
    }
    if (fresh || multi_answered) {
      fail(o, fmt::format(COTUNE_FMT("a transaction failed: {}"), send_failure_.what));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

COTUNE_DECL std::optional<redis_reply> redis_backend::execute(const redis_options& o, std::span<const std::string_view> argv) {
  if (answer_from_backoff(o)) return std::nullopt;
  std::lock_guard lock(mutex_);
  // A call that waited here behind a failing one must not pay another timeout.
  if (answer_from_backoff(o)) return std::nullopt;
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
        last_error_ = fmt::format(COTUNE_FMT("Redis at {}: {} replied: {}"), o.endpoint.display(), argv[0], reply->str);
      }
      return reply;
    }
    context_.reset(); // hiredis contexts are unusable after an I/O error
    ++errors_;
    if (send_failure_.timed_out) {
      ++timeouts_;
      fail(o, fmt::format(COTUNE_FMT("{} timed out after {} ms"), argv[0], o.timeout.count()));
      return std::nullopt;
    }
    if (fresh) {
      fail(o, fmt::format(COTUNE_FMT("{} failed: {}"), argv[0], send_failure_.what));
      return std::nullopt;
    }
    // An old connection the server closed (restart, idle timeout): one retry on a new one.
  }
  return std::nullopt;
}

COTUNE_DECL boost::asio::thread_pool& redis_backend::pool() {
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

} // namespace cotune::redis
