#pragma once
/// \file The bodies of redis/redis_lease.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/redis/redis_lease.hpp>

namespace cotune::redis {

COTUNE_DECL redis_lease& redis_lease::operator=(redis_lease&& other) noexcept {
  if (this != &other) {
    try {
      release();
    } catch (...) {
      // Unreleased, the old lease simply expires after its lifetime.
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

COTUNE_DECL redis_lease::~redis_lease() {
  try {
    release();
  } catch (...) {
    // Unreleased, the lease simply expires after its lifetime.
  }
}

COTUNE_DECL bool redis_lease::renew() {
  if (!held()) return false;
  return renew_state(*state_);
}

COTUNE_DECL bool redis_lease::release() {
  if (!state_ || !state_->held.exchange(false)) return false;
  stop_renewer();
  return detail::lease_script(*state_->backend, detail::lease_release_script, state_->key, state_->token)
      .value_or(false);
}

COTUNE_DECL redis_lease::redis_lease(std::unique_ptr<state> s, bool renew_in_background) : state_(std::move(s)) {
  if (renew_in_background) {
    state* st = state_.get();
    st->renewer = std::jthread([st](std::stop_token stop) {
      const auto period = std::max(st->ttl / 3, std::chrono::milliseconds(1));
      std::unique_lock lock(st->mutex);
      while (!stop.stop_requested()) {
        st->wake.wait_for(lock, stop, period, [] { return false; });
        if (stop.stop_requested()) break;
        lock.unlock();
        const bool ok = renew_state(*st);
        lock.lock();
        if (!ok && !st->held) break;
      }
    });
  }
}

COTUNE_DECL bool redis_lease::renew_state(state& st) {
  const std::string ttl = std::to_string(st.ttl.count());
  auto r = detail::lease_script(*st.backend, detail::lease_renew_script, st.key, st.token, ttl);
  if (r && !*r) st.held = false;
  return r.value_or(false);
}

COTUNE_DECL void redis_lease::stop_renewer() {
  if (state_->renewer.joinable()) {
    state_->renewer.request_stop();
    if (state_->renewer.get_id() != std::this_thread::get_id()) state_->renewer.join();
    else state_->renewer.detach();
  }
}

COTUNE_DECL lease_attempt redis_lease::try_acquire(redis_backend& backend, std::string_view hex_key,
                                              const lease_options& options) {
  const auto o = backend.options();
  auto st = std::make_unique<state>();
  st->backend = &backend;
  st->key = lease_key(o.prefix, hex_key);
  if (o.read_only) return {};
  st->token = make_lease_token();
  st->ttl = options.ttl;
  const std::string ttl = std::to_string(options.ttl.count());
  auto r = backend.command({"SET", st->key, st->token, "NX", "PX", ttl});
  if (!r || r->is_error()) return {};
  if (!r->is_status("OK")) return {std::nullopt, true};
  return {redis_lease(std::move(st), options.renew_in_background), true};
}

COTUNE_DECL std::optional<redis_lease> try_acquire_lease(redis_backend& backend, std::string_view hex_key,
                                                      const lease_options& options) {
  return redis_lease::try_acquire(backend, hex_key, options).lease;
}

COTUNE_DECL std::optional<std::string> lease_holder(redis_backend& backend, std::string_view hex_key) {
  auto r = backend.command({"GET", lease_key(backend.options().prefix, hex_key)});
  if (!r || !r->is_string()) return std::nullopt;
  return std::move(r->str);
}

COTUNE_DECL bool release_lease(redis_backend& backend, std::string_view hex_key, std::string_view token) {
  const auto key = lease_key(backend.options().prefix, hex_key);
  return detail::lease_script(backend, detail::lease_release_script, key, token).value_or(false);
}

namespace detail {

/// One poll of `async_acquire_or_wait`, run on the backend's pool. A named type, not a lambda: the
/// coroutine's frame holds it, and a separately compiled frame may not hold a type without linkage.
struct lease_poller {
  redis_backend* backend;
  std::string_view hex_key;
  std::function<bool()>* ready;
  const lease_options* options;
  bool* saw_holder;
  std::optional<lease_result> operator()() const { return lease_poll(*backend, hex_key, *ready, *options, *saw_holder); }
};

} // namespace detail

COTUNE_DECL boost::asio::awaitable<lease_result>
async_acquire_or_wait(redis_backend& backend, std::string hex_key, std::function<bool()> ready, lease_options options) {
  validate_remote_key(hex_key);
  const auto deadline = std::chrono::steady_clock::now() + options.wait;
  auto pause = options.first_poll;
  bool saw_holder = false;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (;;) {
    auto polling = backend.async_run(detail::lease_poller{&backend, hex_key, &ready, &options, &saw_holder});
    auto done = co_await std::move(polling);
    if (done) co_return std::move(*done);
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) co_return lease_result{lease_status::timed_out};
    timer.expires_after(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    auto pausing = timer.async_wait(boost::asio::use_awaitable);
    co_await std::move(pausing);
    pause = std::min(pause * 2, options.max_poll);
  }
}


COTUNE_DECL lease_options lease_options::from_knobs() {
  lease_options o;
  o.ttl = std::chrono::milliseconds(redis_knobs().lease_ms.get());
  o.wait = std::chrono::milliseconds(redis_knobs().lease_wait_ms.get());
  return o;
}

COTUNE_DECL std::string make_lease_token() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  const std::uint64_t hi = (std::uint64_t(rd()) << 32) ^ rd(), lo = (std::uint64_t(rd()) << 32) ^ rd();
  return fmt::format(COTUNE_FMT("{}:{}:{:016x}{:016x}"), host, ::getpid(), hi, lo);
}

} // namespace cotune::redis
namespace cotune::redis::detail {

COTUNE_DECL std::optional<bool> lease_script(redis_backend& b, std::string_view script, std::string_view key,
                                             std::string_view token, std::string_view extra) {
  std::optional<redis_reply> r = extra.empty() ? b.command({"EVAL", script, "1", key, token})
                                               : b.command({"EVAL", script, "1", key, token, extra});
  if (!r || r->type != redis_reply::kind::integer) return std::nullopt;
  return r->integer == 1;
}

} // namespace cotune::redis::detail
