#pragma once
/// \file One tuning per key across processes and machines: the autotuner's coordination hook
/// (tune/coordination.hpp) for the Redis remote cache, over a lease in Redis.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include <cotune/cache/remote_cache.hpp>
#include <cotune/redis/redis_backend.hpp>
#include <cotune/redis/redis_lease.hpp>
#include <cotune/tune/coordination.hpp>

namespace cotune::redis {

/// A held tuning lease whose key's puts are fenced by it (redis_backend::fence_puts) until it is let go:
/// the fence ends first, then the lease is released.
class fenced_lease {
public:
  fenced_lease(redis_backend& backend, std::string key, redis_lease lease)
      : backend_(&backend), key_(std::move(key)), lease_(std::move(lease)) {
    backend_->fence_puts(key_, lease_.key(), lease_.token());
  }
  fenced_lease(const fenced_lease&) = delete;
  fenced_lease& operator=(const fenced_lease&) = delete;
  ~fenced_lease() { backend_->unfence_puts(key_, lease_.token()); }

private:
  redis_backend* backend_;
  std::string key_;
  redis_lease lease_;
};

/// Takes the key's lease, or waits (bounded by COTUNE_REDIS_LEASE_WAIT_MS) for the holder's result;
/// takes over if the holder dies and its lease expires. With Redis unavailable, the caller tunes alone.
template <class Local>
boost::asio::awaitable<tuning_coordination> coordinate_tuning(basic_remote_cache<redis_backend, Local>& cache,
                                                              std::string hex_key, std::function<bool()> result_ready) {
  auto acquiring =
      async_acquire_or_wait(cache.backend(), hex_key, std::move(result_ready)); // named: see detail/run_on.hpp
  lease_result r = co_await std::move(acquiring);
  tuning_coordination out;
  out.result_ready = r.status == lease_status::ready;
  // While it is held, the key's entries are stored only as its holder's: a process paused past its
  // lease does not overwrite the result of the one that took the key over.
  if (r.lease) out.guard = std::make_shared<fenced_lease>(cache.backend(), std::move(hex_key), std::move(*r.lease));
  co_return out;
}

} // namespace cotune::redis
