// Tests for cotune/gpu/event_timing.hpp that need no GPU: the measuring loop over a Timer on the host
// clock (events are time points; "the stream" is the calling thread, so every run has finished when
// its event is recorded), and the warm-device rule that shortens the warm-up.

#include <chrono>
#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/gpu/event_timing.hpp>

namespace gpu = cotune::gpu;

namespace {

/// A Timer whose events are host time points; no graphs (a capture always fails: batches run back to back).
struct host_timer {
  std::vector<std::chrono::steady_clock::time_point> events;
  std::size_t flushes = 0;
  void reserve(std::size_t n) {
    if (events.size() < n) events.resize(n);
  }
  void record(std::size_t i) {
    reserve(i + 1);
    events[i] = std::chrono::steady_clock::now();
  }
  void wait(std::size_t, const char*) {}
  [[nodiscard]] double elapsed(std::size_t i, std::size_t j) const {
    return std::chrono::duration<double, std::milli>(events[j] - events[i]).count();
  }
  void flush() { ++flushes; }
  void begin_capture() {}
  bool end_capture(bool) { return false; }
  void replay() {}
  void drop_graph() {}
};

/// About `us` microseconds of host work.
void spin(double us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct options_like {
  std::optional<bool> graph{};
  std::optional<double> batch_below_us{};
  std::size_t max_repeats = 10000;
  std::size_t max_graph_launches = 1000;
  double batch_target_ms = 1.0;
};

} // namespace

TEST_CASE("a device is warm only within the window after a measurement ended", "[gpu][event_timing]") {
  gpu::device_warmth w;
  CHECK_FALSE(w.warm(1e9)); // never measured
  w.touch();
  CHECK(w.warm(1e9));
  CHECK_FALSE(w.warm(0.0));
}

TEST_CASE("a device's warmth is one per runtime and device: a measurement anywhere on it warms every reader",
          "[gpu][event_timing]") {
  auto& a = gpu::device_warmth::of("TESTRT", 7);
  CHECK(&a == &gpu::device_warmth::of("TESTRT", 7));
  CHECK(&a != &gpu::device_warmth::of("TESTRT", 8));
  CHECK(&a != &gpu::device_warmth::of("OTHERRT", 7));
  CHECK_FALSE(a.warm(1e9));
  gpu::device_warmth::of("TESTRT", 7).touch(); // e.g. an isolation worker's measurement returned
  CHECK(a.warm(1e9));
  CHECK_FALSE(gpu::device_warmth::of("TESTRT", 8).warm(1e9));
  // Read and touched from several threads at once (the TSan build runs this).
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 1000; ++i) {
        auto& w = gpu::device_warmth::of("TESTRT", 9 + t % 2);
        w.touch();
        (void)w.warm(1.0);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(gpu::device_warmth::of("TESTRT", 9).warm(1e9));
}

TEST_CASE("settings from a benchmarker's options: explicit options win over knobs, warmth caps the warm-up",
          "[gpu][event_timing]") {
  gpu::device_warmth w;
  options_like o{.batch_below_us = 50.0};
  auto s = gpu::settings_from(o, /*graph_knob=*/true, w, /*batch_below_us_knob=*/200.0, /*warm_warmup_ms_knob=*/5.0,
                              gpu::warm_within_ms);
  CHECK(s.batch_below_ms == Approx(0.05));
  CHECK(s.always_batch);
  CHECK_FALSE(s.warm_warmup_ms.has_value()); // cold: the whole warm-up
  w.touch();
  o.graph = false;
  s = gpu::settings_from(o, true, w, 200.0, 5.0, gpu::warm_within_ms);
  CHECK_FALSE(s.always_batch);
  REQUIRE(s.warm_warmup_ms.has_value());
  CHECK(*s.warm_warmup_ms == 5.0);
}

TEST_CASE("a warm device warms up for at most the warm budget; a cold one for bench_options::warmup_ms",
          "[gpu][event_timing]") {
  host_timer t;
  std::size_t runs = 0;
  const std::function<void()> fn = [&] {
    ++runs;
    spin(300); // over batch_below: timed per launch
  };
  const cotune::bench_options opts{.warmup_ms = 6.0, .rep_ms = 3.0, .noise_target = 0.0};
  gpu::timing_settings cold{.batch_below_ms = 0.2};
  const auto m_cold = gpu::timed_measurement(t, fn, opts, cold);
  CHECK(m_cold.method == "per-launch");
  CHECK(m_cold.warmup_runs >= 2); // 6 ms of ~0.3 ms runs (fewer only if the host stalls for ms)
  CHECK(runs == 5 + m_cold.warmup_runs + m_cold.samples);

  gpu::timing_settings warm = cold;
  warm.warm_warmup_ms = 0.0; // a warm device with no warm-up budget: the one run the loop always makes
  runs = 0;
  const auto m_warm = gpu::timed_measurement(t, fn, opts, warm);
  CHECK(m_warm.warmup_runs == 1);
  CHECK(runs == 5 + 1 + m_warm.samples);
  CHECK(m_warm.warmup_runs < m_cold.warmup_runs);

  // The warm budget never lengthens the warm-up past the caller's own.
  warm.warm_warmup_ms = 1e6;
  const cotune::bench_options none{.warmup_ms = 0.0, .rep_ms = 3.0, .noise_target = 0.0};
  CHECK(gpu::timed_measurement(t, fn, none, warm).warmup_runs == 1);
}
