// Tests for cotune/bench/stopping_rule.hpp: the noise tracker's statistics and the stopping rule, on
// seeded synthetic samples and synthetic elapsed times (no clock is read here).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <cotune/bench/stopping_rule.hpp>

using cotune::noise_tracker;
using cotune::stop_reason;
using cotune::stopping_rule;

namespace {

stopping_rule rule(double target, std::size_t min_samples, std::size_t max_samples, double budget_ms) {
  stopping_rule r;
  r.noise_target = target;
  r.min_samples = min_samples;
  r.max_samples = max_samples;
  r.budget_ms = budget_ms;
  return r;
}

struct run_result {
  stop_reason reason;
  std::size_t samples;
  double rsd;
};

/// Feeds normal samples (mean 1 ms, relative spread `spread`, seeded), each costing `cost_ms` of
/// synthetic time, until the rule stops.
run_result run(const stopping_rule& r, double spread, unsigned seed, double cost_ms = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> d(1.0, spread);
  noise_tracker noise = r.tracker();
  double spent = 0.0;
  for (;;) {
    noise.add(d(gen));
    spent += cost_ms;
    if (auto why = r.check(noise, spent); why != stop_reason::none) return {why, noise.count(), noise.rsd()};
    REQUIRE(noise.count() < 1000000); // a rule that never stops is a defect
  }
}

} // namespace

TEST_CASE("the tracker's mean and rsd match the two-pass formulas", "[bench][stopping_rule]") {
  const std::vector<double> xs{1.0, 2.0, 4.0, 7.0};
  noise_tracker t;
  CHECK(t.rsd() == 0.0);
  for (double x : xs) t.add(x);
  // mean 3.5; squared deviations 6.25 + 2.25 + 0.25 + 12.25 = 21; sample variance 7.
  CHECK(t.count() == 4);
  CHECK(t.mean() == Approx(3.5));
  CHECK(t.rsd() == Approx(std::sqrt(7.0) / 3.5));
}

TEST_CASE("one sample, equal samples and zero samples have no noise", "[bench][stopping_rule]") {
  noise_tracker one;
  one.add(5.0);
  CHECK(one.rsd() == 0.0);
  noise_tracker same;
  for (int i = 0; i < 20; ++i) same.add(0.25);
  CHECK(same.rsd() == 0.0);
  noise_tracker zeros; // below the clock's resolution: no mean to divide by
  for (int i = 0; i < 5; ++i) zeros.add(0.0);
  CHECK(zeros.rsd() == 0.0);
  CHECK(std::isfinite(zeros.rsd_drift()));
}

TEST_CASE("microsecond samples keep their rsd (no cancellation)", "[bench][stopping_rule]") {
  // 1 ms +- 1 ns: a naive sum-of-squares variance loses every digit of the spread here.
  noise_tracker t;
  for (int i = 0; i < 1000; ++i) t.add(1.0 + (i % 2 ? 1e-6 : -1e-6));
  CHECK(t.rsd() == Approx(1e-6).epsilon(1e-3));
}

TEST_CASE("quiet samples stop on noise after the minimum count", "[bench][stopping_rule]") {
  const auto r = rule(0.005, 10, 10000, 1e9);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const auto res = run(r, 0.001, seed);
    CHECK(res.reason == stop_reason::noise);
    CHECK(res.samples == 10); // 0.1% spread is under 0.5% from the first check on
    CHECK(res.rsd <= 0.005);
  }
}

TEST_CASE("a noise target of 0 spends the budget", "[bench][stopping_rule]") {
  const auto r = rule(0.0, 10, 10000, 50.0);
  const auto res = run(r, 0.001, 7);
  CHECK(res.reason == stop_reason::budget);
  CHECK(res.samples == 50); // 1 ms each: the 50th reaches 50 ms
}

TEST_CASE("noisy samples stop when their noise settles, well before the budget", "[bench][stopping_rule]") {
  // 5% spread never gets under 0.5%: nvbench's convergence test ends the measurement instead.
  const auto r = rule(0.005, 10, 10000, 1e9);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const auto res = run(r, 0.05, seed);
    CHECK(res.reason == stop_reason::stable);
    CHECK(res.samples >= 2 * r.stable_window);
    CHECK(res.samples <= 1000);
    CHECK(res.rsd == Approx(0.05).margin(0.03));
  }
}

TEST_CASE("the budget and the cap come first when they are reached first", "[bench][stopping_rule]") {
  // Budget: 5 ms at 1 ms per sample is 5 samples, under the minimum of 10.
  const auto b = run(rule(0.005, 10, 10000, 5.0), 0.001, 3);
  CHECK(b.reason == stop_reason::budget);
  CHECK(b.samples == 5);
  // Cap: 3 samples.
  const auto c = run(rule(0.005, 10, 3, 1e9), 0.001, 3);
  CHECK(c.reason == stop_reason::cap);
  CHECK(c.samples == 3);
  // A zero budget still takes one sample.
  const auto z = run(rule(0.005, 10, 10000, 0.0), 0.001, 3);
  CHECK(z.reason == stop_reason::budget);
  CHECK(z.samples == 1);
}

TEST_CASE("the minimum count holds back a noise stop", "[bench][stopping_rule]") {
  const auto r = rule(0.005, 25, 10000, 1e9);
  noise_tracker t = r.tracker();
  for (int i = 0; i < 24; ++i) {
    t.add(1.0);
    CHECK(r.check(t, 0.0) == stop_reason::none);
  }
  t.add(1.0);
  CHECK(r.check(t, 0.0) == stop_reason::noise);
  CHECK(r.check(noise_tracker{}, 1e9) == stop_reason::none); // no sample yet: never stop before one
}

TEST_CASE("required samples come before the budget and the cap", "[bench][stopping_rule]") {
  cotune::bench_options o;
  o.rep_ms = 5;
  o.noise_target = 0.0;
  o.required_samples = 3;
  const auto r = stopping_rule::from(o, 1); // a cap of 1 (one run fits the budget) is raised to 3
  CHECK(r.required_samples == 3);
  CHECK(r.max_samples == 3);
  noise_tracker t = r.tracker();
  t.add(10.0);
  CHECK(r.check(t, 1e9) == stop_reason::none); // far past the budget
  t.add(11.0);
  CHECK(r.check(t, 1e9) == stop_reason::none);
  t.add(10.5);
  CHECK(r.check(t, 1e9) == stop_reason::cap);
  // Unset: one sample, as before.
  o.required_samples.reset();
  CHECK(stopping_rule::from(o, 1).required_samples == 1);
}

TEST_CASE("the same seed gives the same stop", "[bench][stopping_rule]") {
  const auto r = rule(0.005, 10, 10000, 1e9);
  const auto a = run(r, 0.02, 42), b = run(r, 0.02, 42);
  CHECK(a.reason == b.reason);
  CHECK(a.samples == b.samples);
  CHECK(a.rsd == b.rsd);
}

TEST_CASE("the rule comes from the options, else from the knobs", "[bench][stopping_rule]") {
  cotune::bench_options o;
  o.rep_ms = 40;
  {
    auto target = cotune::knobs().bench.noise_target.scoped(0.02);
    auto minimum = cotune::knobs().bench.min_samples.scoped(7);
    const auto r = stopping_rule::from(o, 123);
    CHECK(r.noise_target == 0.02);
    CHECK(r.min_samples == 7);
    CHECK(r.max_samples == 123);
    CHECK(r.budget_ms == 40);
  }
  o.noise_target = 0.0;
  o.min_samples = 3;
  const auto r = stopping_rule::from(o, 0);
  CHECK(r.noise_target == 0.0);
  CHECK(r.min_samples == 3);
  CHECK(r.max_samples == 1); // at least one sample
  o.noise_target = -1.0;
  CHECK_THROWS_WITH(stopping_rule::from(o, 10), Catch::Contains("noise_target"));
}

TEST_CASE("stop reasons have names for tables", "[bench][stopping_rule]") {
  STATIC_REQUIRE(cotune::to_string(stop_reason::noise) == "noise");
  CHECK(cotune::to_string(stop_reason::stable) == "stable");
  CHECK(cotune::to_string(stop_reason::budget) == "budget");
  CHECK(cotune::to_string(stop_reason::cap) == "cap");
  CHECK(cotune::to_string(stop_reason::none).empty());
}
