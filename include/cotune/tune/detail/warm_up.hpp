#pragma once
/// \file `cotune::warm_up`: compiles every candidate a tuning would try (filling the binary cache),
/// measuring nothing. It needs no argument types: one coroutine per backend, benchmarker and cache.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>

#include <cotune/backend/backend.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/detail/async_queue.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// Compiles every candidate of `pruned` (a call's, pruned for its arguments) for the launch device,
/// concurrently, measuring nothing.
template <Backend B, class Bench, CacheManager Cache>
boost::asio::awaitable<std::vector<candidate_result>> warm_up(tuning_core<B, Bench, Cache>& ctx,
                                                               std::vector<config> pruned) {
  std::vector<candidate_result> results;
  for (auto& c : pruned) results.push_back(candidate_result{c});
  auto remaining = std::make_shared<std::atomic<std::size_t>>(pruned.size());
  auto done = std::make_shared<detail::async_queue<bool>>();
  for (std::size_t i = 0; i < results.size(); ++i)
    boost::asio::post(ctx.eng.compile_executor(), [&ctx, &results, i, remaining, done] {
      auto& r = results[i];
      const auto t0 = std::chrono::steady_clock::now();
      try {
        r.binary_from_cache = ctx.compile(r.cfg, ctx.devices[ctx.settings.device], {}).from_cache;
        r.status = candidate_status::ok;
        r.time = {inf_ms, inf_ms, inf_ms};
      } catch (...) {
        detail::record_failure(r, std::current_exception());
      }
      r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (--*remaining == 0) done->push(true);
    });
  if (!results.empty()) {
    auto popping = done->pop();
    co_await std::move(popping);
  }
  co_return results;
}

} // namespace cotune
