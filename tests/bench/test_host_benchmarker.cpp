// Tests for cotune/bench/host_benchmarker.hpp: do_bench's budgets and the stopping rule, counted in
// calls (never in time). Where a count must be exact, noise stopping is off or its target is one no
// sample can miss.

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cotune/bench/host_benchmarker.hpp>

using cotune::bench_options;
using cotune::host_benchmarker;
using cotune::return_mode;
using namespace std::chrono_literals;

static_assert(cotune::Benchmarker<host_benchmarker>);
static_assert(cotune::ReportsMeasurement<host_benchmarker>);

namespace {

bench_options budgets(double warmup_ms, double rep_ms, return_mode mode = return_mode::all) {
  bench_options o;
  o.warmup_ms = warmup_ms;
  o.rep_ms = rep_ms;
  o.mode = mode;
  o.noise_target = 0.0; // budget and cap only: the counts below do not depend on the samples' noise
  return o;
}

} // namespace

TEST_CASE("zero budgets still make one warm-up and one measured run", "[bench][host_benchmarker]") {
  host_benchmarker b;
  int calls = 0;
  const auto r = b.bench([&] { ++calls; }, budgets(0, 0));
  // 1 untimed call + 1 for the estimate (its budget is spent after one) + 1 warm-up + 1 measured.
  CHECK(calls == 4);
  REQUIRE(r.size() == 1);
  CHECK(r[0] >= 0.0);
}

TEST_CASE("a zero-cost callable does not divide by zero and respects max_repeats", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 50});
  long calls = 0;
  const auto r = b.bench([&] { ++calls; }, budgets(0, 1e6));
  REQUIRE(r.size() == 50);
  for (double t : r) {
    CHECK(std::isfinite(t));
    CHECK(t >= 0.0);
  }
  CHECK(calls == 1 + 5 + 1 + 50);
  const auto mean = b.bench([] {}, budgets(0, 1e6, return_mode::mean));
  REQUIRE(mean.size() == 1);
  CHECK(std::isfinite(mean[0]));
}

TEST_CASE("equal warm-up and measurement budgets make no more measured runs than warm-up runs",
          "[bench][host_benchmarker]") {
  // n_warmup = max(1, warmup / estimate) and the cap max(1, rep / estimate), from one estimate; the
  // wall-clock budget may stop the measured runs sooner.
  host_benchmarker b;
  int calls = 0;
  const auto m = b.measure(
      [&] {
        ++calls;
        std::this_thread::sleep_for(200us);
      },
      budgets(3, 3));
  CHECK(m.samples >= 1);
  CHECK(m.samples <= m.warmup_runs);
  CHECK(m.times.size() == m.samples);
  CHECK((m.stopped == cotune::stop_reason::cap || m.stopped == cotune::stop_reason::budget));
  CHECK(calls == static_cast<int>(1 + 5 + m.warmup_runs + m.samples));
}

TEST_CASE("the budgets bound the number of runs of a slow callable", "[bench][host_benchmarker]") {
  // Each call sleeps at least 2 ms, so the estimate is at least 2 ms and a 5 ms budget allows at
  // most 2 runs (int(5 / 2)); the estimate stops once its calls have taken the 5 ms.
  host_benchmarker b;
  int calls = 0;
  const auto r = b.bench(
      [&] {
        ++calls;
        std::this_thread::sleep_for(2ms);
      },
      budgets(5, 5));
  CHECK(r.size() >= 1);
  CHECK(r.size() <= 2);
  CHECK(calls >= 1 + 1 + 1 + 1);
  CHECK(calls <= 1 + 3 + 2 + 2);
}

TEST_CASE("the cap applies to measured runs only", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 3});
  int calls = 0;
  const auto r = b.bench(
      [&] {
        ++calls;
        std::this_thread::sleep_for(100us);
      },
      budgets(2, 1e6));
  CHECK(r.size() == 3);
  CHECK(calls >= 1 + 5 + 1 + 3);
}

TEST_CASE("return modes and quantiles summarise the measured runs", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 20});
  auto fn = [] { std::this_thread::sleep_for(50us); };
  for (auto mode : {return_mode::min, return_mode::max, return_mode::mean, return_mode::median}) {
    const auto r = b.bench(fn, budgets(0, 1e6, mode));
    REQUIRE(r.size() == 1);
    CHECK(r[0] > 0.0);
  }
  CHECK(b.bench(fn, budgets(0, 1e6, return_mode::all)).size() == 20);
  auto q = budgets(0, 1e6);
  q.quantiles = {0.5, 0.2, 0.8};
  const auto r = b.bench(fn, q);
  REQUIRE(r.size() == 3);
  CHECK(r[1] <= r[0]);
  CHECK(r[0] <= r[2]);
}

TEST_CASE("a quantile out of [0, 1] is refused before anything runs", "[bench][host_benchmarker]") {
  host_benchmarker b;
  int calls = 0;
  auto o = budgets(0, 0);
  o.quantiles = {0.5, 1.5};
  CHECK_THROWS_WITH(b.bench([&] { ++calls; }, o), Catch::Contains("[0, 1]"));
  CHECK(calls == 0);
}

TEST_CASE("an exception from the callable propagates", "[bench][host_benchmarker]") {
  host_benchmarker b;
  int calls = 0;
  CHECK_THROWS_WITH(b.bench(
                        [&] {
                          ++calls;
                          throw std::runtime_error("kernel failed");
                        },
                        budgets(0, 0)),
                    "kernel failed");
  CHECK(calls == 1);
  calls = 0;
  CHECK_THROWS_AS(b.bench(
                      [&] {
                        if (++calls == 4) throw std::logic_error("fails later");
                      },
                      budgets(0, 0)),
                  std::logic_error);
  CHECK(calls == 4);
}

TEST_CASE("flushing between runs does not change the number of calls", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 1 << 20, .max_repeats = 7});
  int calls = 0;
  const auto r = b.bench([&] { ++calls; }, budgets(0, 1e6));
  CHECK(r.size() == 7);
  CHECK(calls == 1 + 5 + 1 + 7);
}

TEST_CASE("a run longer than COTUNE_BENCH_TIMEOUT_MS is a timeout and is not repeated", "[bench][host_benchmarker]") {
  auto limit = cotune::knobs().bench.timeout_ms.scoped(20);
  host_benchmarker b;
  int calls = 0;
  CHECK_THROWS_AS(b.bench(
                      [&] {
                        ++calls;
                        std::this_thread::sleep_for(std::chrono::milliseconds(60));
                      },
                      budgets(0, 1000)),
                  cotune::timeout_error);
  CHECK(calls == 1);
}

TEST_CASE("measure reports the method, the samples, the noise and why it stopped", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 6});
  int calls = 0;
  const auto m = b.measure([&] { ++calls; }, budgets(0, 1e6));
  CHECK(m.method == "host");
  CHECK(m.batch == 1);
  CHECK(m.samples == 6);
  CHECK(m.times.size() == 6); // return_mode::all: the samples themselves
  CHECK(m.stopped == cotune::stop_reason::cap);
  CHECK(std::isfinite(m.rsd));
  CHECK(m.rsd >= 0.0);
  CHECK(m.wall_ms >= 0.0);
  CHECK(calls == static_cast<int>(1 + 5 + m.warmup_runs + 6));
}

TEST_CASE("a met noise target stops sampling at the minimum count", "[bench][host_benchmarker]") {
  // A target no sample spread can exceed: the rule stops as soon as it may, after min_samples.
  host_benchmarker b;
  auto o = budgets(0, 1e6, return_mode::median);
  o.noise_target = 1e9;
  o.min_samples = 4;
  int calls = 0;
  const auto m = b.measure([&] { ++calls; }, o);
  CHECK(m.stopped == cotune::stop_reason::noise);
  CHECK(m.samples == 4);
  REQUIRE(m.times.size() == 1);
  CHECK(calls == static_cast<int>(1 + 5 + m.warmup_runs + 4));
}

TEST_CASE("noise stopping from the knobs never takes more runs than the cap", "[bench][host_benchmarker]") {
  auto target = cotune::knobs().bench.noise_target.scoped(0.005);
  auto minimum = cotune::knobs().bench.min_samples.scoped(5);
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 200});
  bench_options o;
  o.warmup_ms = 0;
  o.rep_ms = 1e6;
  o.quantiles = {0.5, 0.2, 0.8};
  int calls = 0;
  const auto m = b.measure(
      [&] {
        ++calls;
        std::this_thread::sleep_for(20us);
      },
      o);
  // Which rule fired depends on this machine's noise; the accounting does not.
  CHECK(m.samples >= 1);
  CHECK(m.samples <= 200);
  CHECK(m.stopped != cotune::stop_reason::none);
  CHECK(m.stopped != cotune::stop_reason::budget); // 1e6 ms cannot pass in a test
  if (m.stopped == cotune::stop_reason::noise || m.stopped == cotune::stop_reason::stable) CHECK(m.samples >= 5);
  if (m.stopped == cotune::stop_reason::noise) CHECK(m.rsd <= 0.005);
  CHECK(m.times.size() == 3);
  CHECK(calls == static_cast<int>(1 + 5 + m.warmup_runs + m.samples));
}

TEST_CASE("bench returns what measure summarises", "[bench][host_benchmarker]") {
  host_benchmarker b(host_benchmarker::options{.flush_bytes = 0, .max_repeats = 9});
  CHECK(b.bench([] {}, budgets(0, 1e6)).size() == 9);
  auto q = budgets(0, 1e6);
  q.quantiles = {0.5, 0.1};
  CHECK(b.measure([] {}, q).times.size() == 2);
}

TEST_CASE("required samples are taken past the budget, and the estimate stops at the budget",
          "[bench][host_benchmarker]") {
  // A callable slower than the whole budget: one estimate call, one warm-up call, then as many measured
  // runs as required (issue 35: screening judged a slow kernel by one run).
  host_benchmarker b;
  int calls = 0;
  auto o = budgets(1, 1);
  o.required_samples = 3;
  const auto m = b.measure(
      [&] {
        ++calls;
        std::this_thread::sleep_for(2ms);
      },
      o);
  CHECK(m.samples == 3);
  CHECK(m.times.size() == 3);
  CHECK(calls == 1 + 1 + 1 + 3);
  o.required_samples.reset();
  calls = 0;
  CHECK(b.measure([&] { ++calls; std::this_thread::sleep_for(2ms); }, o).samples == 1);
  CHECK(calls == 1 + 1 + 1 + 1);
}
