// Tests for cotune/bench/measurement.hpp: the ReportsMeasurement capability, present and absent.

#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include <cotune/bench/measurement.hpp>

using cotune::bench_options;
using cotune::measurement;

namespace {

/// Only do_bench: a Benchmarker that does not report how it measured.
struct bench_only {
  std::vector<double> bench(const std::function<void()>& fn, const bench_options&) {
    fn();
    return {1.0};
  }
};

/// Both, as the shipped benchmarkers do.
struct reporting : bench_only {
  measurement measure(const std::function<void()>& fn, const bench_options& o) {
    return {.times = bench(fn, o), .method = "fake", .samples = 1};
  }
};

/// A near miss: `measure` returning the bare times is not the capability.
struct near_miss : bench_only {
  std::vector<double> measure(const std::function<void()>& fn, const bench_options& o) { return bench(fn, o); }
};

/// `measure` without `bench` is no Benchmarker, so it reports nothing either.
struct measure_only {
  measurement measure(const std::function<void()>&, const bench_options&) { return {}; }
};

} // namespace

static_assert(cotune::Benchmarker<bench_only>);
static_assert(!cotune::ReportsMeasurement<bench_only>);
static_assert(cotune::ReportsMeasurement<reporting>);
static_assert(!cotune::ReportsMeasurement<near_miss>);
static_assert(!cotune::ReportsMeasurement<measure_only>);

TEST_CASE("a measurement defaults to nothing measured", "[bench][measurement]") {
  const measurement m;
  CHECK(m.times.empty());
  CHECK(m.method.empty());
  CHECK(m.samples == 0);
  CHECK(m.batch == 1);
  CHECK(m.stopped == cotune::stop_reason::none);
  reporting r;
  int calls = 0;
  const auto got = r.measure([&] { ++calls; }, bench_options{});
  CHECK(got.method == "fake");
  CHECK(got.times == std::vector<double>{1.0});
  CHECK(calls == 1);
}

TEST_CASE("a measurement travels as numbers and comes back whole", "[bench][measurement]") {
  const std::pair<const char*, std::size_t> methods[] = {
      {"host", 1}, {"per-launch", 1}, {"graph-batch x250", 250}, {"back-to-back x17", 17}};
  for (const auto& [method, batch] : methods) {
    measurement m{.times = {1.5, 1.25, 1.75}, .method = method, .rsd = 0.004, .samples = 42, .batch = batch};
    const measurement back = cotune::measurement_of_values(cotune::as_values(m));
    CHECK(back.times == m.times);
    CHECK(back.method == m.method);
    CHECK(back.rsd == m.rsd);
    CHECK(back.samples == m.samples);
  }
  // Plain timings (a benchmarker without measure) are times and nothing else.
  const measurement plain = cotune::measurement_of_values({2.0, 1.0, 3.0});
  CHECK(plain.times == std::vector<double>{2.0, 1.0, 3.0});
  CHECK(plain.method.empty());
  // An unknown method is not invented on the way back.
  const measurement odd = cotune::measurement_of_values(cotune::as_values({.times = {1, 1, 1}, .method = "mine"}));
  CHECK(odd.method.empty());
}
