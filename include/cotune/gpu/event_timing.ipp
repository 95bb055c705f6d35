#pragma once
/// \file The bodies of gpu/event_timing.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <cotune/gpu/event_timing.hpp>

namespace cotune::gpu {

COTUNE_DECL device_warmth& device_warmth::of(std::string_view runtime, int ordinal) {
  static std::mutex mutex;
  static auto* all = new std::map<std::pair<std::string, int>, std::unique_ptr<device_warmth>>; // never destroyed
  std::lock_guard lock(mutex);
  auto& w = (*all)[{std::string(runtime), ordinal}];
  if (!w) w = std::make_unique<device_warmth>();
  return *w;
}

COTUNE_DECL bool device_warmth::warm(double within_ms) const {
  const auto last = last_.load(std::memory_order_relaxed);
  if (last == never) return false;
  const auto since = std::chrono::steady_clock::now().time_since_epoch() - std::chrono::steady_clock::duration(last);
  return std::chrono::duration<double, std::milli>(since).count() < within_ms;
}

} // namespace cotune::gpu
