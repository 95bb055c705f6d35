#pragma once
/// \file The bodies of tune/tuning_timeline.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <cotune/tune/detail/tuning_timeline.hpp>

namespace cotune {

COTUNE_DECL std::size_t tuning_timeline::this_thread() {
  static std::atomic<std::size_t> next{1};
  thread_local const std::size_t mine = next++;
  return mine;
}

COTUNE_DECL tuning_phases tuning_timeline::close(clock::time_point start, clock::time_point end,
                                                 std::size_t compile_threads) {
  start_ = start;
  end_ = std::max(start, end);
  const auto spans = this->spans();
  tuning_phases out;
  out.compile_threads = compile_threads;
  std::set<std::string> devices;
  for (const auto& s : spans)
    if (s.phase != trace_phase::compile) devices.insert(s.track);
  out.devices = std::max<std::size_t>(devices.size(), 1);
  // The wall split: at each instant the highest-ranked phase in progress, in this order (a
  // verification runs inside its measurement's span, so it ranks above it).
  enum rank { verify, measure, load, compile, kinds };
  auto rank_of = [](trace_phase p) {
    switch (p) {
    case trace_phase::verify: return verify;
    case trace_phase::load: return load;
    case trace_phase::compile: return compile;
    default: return measure;
    }
  };
  std::vector<std::pair<clock::time_point, int>> edges; // (when, +-(rank + 1))
  std::array<double, kinds> busy{};
  for (const auto& s : spans) {
    const auto a = std::clamp(s.start, start_, end_), b = std::clamp(s.end, start_, end_);
    const int r = rank_of(s.phase);
    busy[r] += std::chrono::duration<double, std::milli>(s.end - s.start).count();
    if (b <= a) continue;
    edges.emplace_back(a, r + 1);
    edges.emplace_back(b, -(r + 1));
  }
  std::sort(edges.begin(), edges.end());
  std::array<int, kinds> open{};
  std::array<double, kinds + 1> wall{}; // the last: idle
  auto at = start_;
  for (const auto& [when, change] : edges) {
    int top = kinds;
    for (int r = 0; r < kinds; ++r)
      if (open[r] > 0) {
        top = r;
        break;
      }
    wall[top] += std::chrono::duration<double, std::milli>(when - at).count();
    at = when;
    open[change > 0 ? change - 1 : -change - 1] += change > 0 ? 1 : -1;
  }
  wall[kinds] += std::chrono::duration<double, std::milli>(end_ - at).count();
  out.wall = {wall[compile], wall[load], wall[verify], wall[measure]};
  out.idle_ms = wall[kinds];
  // A measurement's span holds its verification: the device's measuring time is the rest.
  out.busy = {busy[compile], busy[load], busy[verify], std::max(0.0, busy[measure] - busy[verify])};
  return out;
}

} // namespace cotune
