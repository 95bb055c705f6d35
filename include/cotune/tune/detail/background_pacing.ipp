#pragma once
/// \file The bodies of tune/detail/background_pacing.hpp (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <map>
#include <system_error>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cotune/tune/detail/background_pacing.hpp>

namespace cotune::detail {

COTUNE_DECL device_share::clock::duration device_share::pause(clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return free_at_ > now ? free_at_ - now : clock::duration::zero();
}

COTUNE_DECL void device_share::busy(clock::time_point start, clock::time_point end, double share) {
  if (!(share > 0) || share >= 1 || end <= start) return;
  const auto idle = std::chrono::duration_cast<clock::duration>((end - start) * ((1 - share) / share));
  std::lock_guard lock(mutex_);
  free_at_ = std::max(free_at_, end) + idle;
}

COTUNE_DECL device_share& device_share::of(const std::string& id) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<device_share>> shares; // never freed: timers may refer to them
  std::lock_guard lock(mutex);
  auto& s = shares[id];
  if (!s) s = std::make_unique<device_share>();
  return *s;
}

COTUNE_DECL void run_paced(device_share& share, double fraction, boost::asio::any_io_executor device,
                           boost::asio::any_io_executor timers, std::shared_ptr<pacing_counts> counts,
                           std::function<void()> work) {
  using clock = device_share::clock;
  const auto now = clock::now();
  if (const auto wait = share.pause(now); wait > clock::duration::zero()) {
    counts->paused(wait);
    auto timer = std::make_shared<boost::asio::steady_timer>(timers, wait);
    timer->async_wait([timer, &share, fraction, device, timers, counts = std::move(counts),
                       work = std::move(work)](std::error_code) mutable {
      auto retry = [&share, fraction, device, timers, counts = std::move(counts), work = std::move(work)]() mutable {
        run_paced(share, fraction, device, timers, std::move(counts), std::move(work));
      };
      boost::asio::post(device, std::move(retry));
    });
    return;
  }
  struct record {
    device_share& share;
    clock::time_point start;
    double fraction;
    ~record() { share.busy(start, clock::now(), fraction); }
  } busy{share, now, fraction};
  work();
}

COTUNE_DECL boost::asio::awaitable<void> pause_for(boost::asio::any_io_executor timers,
                                                   device_share::clock::duration wait) {
  boost::asio::steady_timer timer(timers, wait);
  auto waiting = timer.async_wait(boost::asio::use_awaitable); // named: see detail/run_on.hpp
  co_await std::move(waiting);
}

COTUNE_DECL double measured_spread(const candidate_result& r) {
  if (r.status != candidate_status::ok || !(r.time[0] > 0)) return inf_ms;
  return (r.time[2] - r.time[1]) / r.time[0];
}

namespace {

bool measured(const candidate_result& r) { return r.status == candidate_status::ok && r.samples > 0; }

} // namespace

COTUNE_DECL double median_spread(const std::vector<candidate_result>& results) {
  std::vector<double> spreads;
  for (const auto& r : results)
    if (measured(r)) spreads.push_back(measured_spread(r));
  if (spreads.empty()) return 0;
  std::nth_element(spreads.begin(), spreads.begin() + static_cast<std::ptrdiff_t>(spreads.size() / 2), spreads.end());
  return spreads[spreads.size() / 2];
}

COTUNE_DECL std::vector<std::size_t> noisy_measurements(const std::vector<candidate_result>& results) {
  const double limit = std::max(noisy_spread_floor, noisy_spread_factor * median_spread(results));
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (measured(results[i]) && measured_spread(results[i]) > limit) out.push_back(i);
  return out;
}

COTUNE_DECL bool noisy_finals(const std::vector<candidate_result>& results, const std::vector<std::size_t>& finalists,
                              double reference) {
  const double limit = std::max(noisy_spread_floor, noisy_spread_factor * reference);
  return std::any_of(finalists.begin(), finalists.end(),
                     [&](std::size_t i) { return measured(results[i]) && measured_spread(results[i]) > limit; });
}

} // namespace cotune::detail
