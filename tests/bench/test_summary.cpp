// Tests for cotune/bench/summary.hpp: quantiles by linear interpolation and do_bench's return modes.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <cotune/bench/summary.hpp>

using cotune::bench_options;
using cotune::quantile_of_sorted;
using cotune::return_mode;
using cotune::summarize;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

constexpr bench_options mode(return_mode m) {
  bench_options o;
  o.mode = m;
  return o;
}

constexpr bool interpolation_rules() {
  // Hand-computed: p = q * (n - 1), value = (1 - frac) * a[floor p] + frac * a[ceil p].
  const std::vector<double> four{1, 2, 3, 4};
  const std::vector<double> one{10};
  const std::vector<double> two{1, 3};
  return quantile_of_sorted(four, 0.0) == 1.0 && quantile_of_sorted(four, 1.0) == 4.0 &&
         quantile_of_sorted(four, 0.5) == 2.5 && quantile_of_sorted(four, 0.25) == 1.75 &&
         quantile_of_sorted(two, 0.25) == 1.5 && quantile_of_sorted(one, 0.0) == 10.0 &&
         quantile_of_sorted(one, 0.7) == 10.0 && quantile_of_sorted(one, 1.0) == 10.0;
}

constexpr bool mode_rules() {
  const std::vector<double> samples{5, 1, 4, 2, 3};
  const std::vector<double> even{4, 1, 3, 2};
  bench_options q;
  q.quantiles = {0.5, 0.2, 0.8};
  const auto quantiles = summarize(samples, q);
  const auto all = summarize(samples, mode(return_mode::all));
  return summarize(samples, mode(return_mode::min)) == std::vector<double>{1} &&
         summarize(samples, mode(return_mode::max)) == std::vector<double>{5} &&
         summarize(samples, mode(return_mode::mean)) == std::vector<double>{3} &&
         summarize(samples, mode(return_mode::median)) == std::vector<double>{3} &&
         summarize(even, mode(return_mode::median)) == std::vector<double>{2.5} &&
         summarize(even, mode(return_mode::mean)) == std::vector<double>{2.5} &&
         all == samples && quantiles.size() == 3 && quantiles[0] == 3.0;
}

} // namespace

TEST_CASE("quantiles interpolate linearly between neighbours", "[bench][summary]") {
  static_assert(interpolation_rules());
  CHECK(interpolation_rules());
  const std::vector<double> four{1, 2, 3, 4};
  // p = 0.2 * 3 = 0.6: 0.4 * 1 + 0.6 * 2; p = 0.8 * 3 = 2.4: 0.6 * 3 + 0.4 * 4.
  CHECK(quantile_of_sorted(four, 0.2) == Approx(1.6));
  CHECK(quantile_of_sorted(four, 0.8) == Approx(3.4));
  const std::vector<double> uneven{0.5, 1.0, 4.0, 10.0, 11.0};
  // p = 0.9 * 4 = 3.6: 0.4 * 10 + 0.6 * 11 = 10.6; p = 0.1 * 4 = 0.4: 0.6 * 0.5 + 0.4 * 1.0 = 0.7.
  CHECK(quantile_of_sorted(uneven, 0.9) == Approx(10.6));
  CHECK(quantile_of_sorted(uneven, 0.1) == Approx(0.7));
}

TEST_CASE("return modes summarise as do_bench does", "[bench][summary]") {
  static_assert(mode_rules());
  CHECK(mode_rules());
  const std::vector<double> samples{5, 1, 4, 2, 3};
  bench_options q;
  q.quantiles = {0.5, 0.2, 0.8};
  q.mode = return_mode::max; // quantiles win over the mode
  const auto r = summarize(samples, q);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == 3.0);
  CHECK(r[1] == Approx(1.8)); // p = 0.8: 0.2 * 1 + 0.8 * 2
  CHECK(r[2] == Approx(4.2)); // p = 3.2: 0.8 * 4 + 0.2 * 5
  CHECK(summarize(samples, mode(return_mode::all)) == samples); // in measured order
  CHECK(summarize({0.1, 0.2, 0.4}, mode(return_mode::mean))[0] == Approx(0.7 / 3));
  CHECK(summarize({7}, bench_options{})[0] == 7.0); // the default mode is mean
}

TEST_CASE("a quantile outside [0, 1] is an error", "[bench][summary]") {
  const std::vector<double> s{1, 2, 3};
  for (double q : {-0.1, 1.1, -inf, inf, std::numeric_limits<double>::quiet_NaN()}) {
    INFO(q);
    CHECK_THROWS_WITH(quantile_of_sorted(s, q), Catch::Contains("[0, 1]"));
    bench_options o;
    o.quantiles = {0.5, q};
    CHECK_THROWS_AS(summarize(s, o), cotune::error);
    CHECK_THROWS_AS(cotune::check_quantiles(o.quantiles), cotune::error);
  }
  CHECK_NOTHROW(cotune::check_quantiles({0.0, 0.5, 1.0}));
}

TEST_CASE("no samples is an error", "[bench][summary]") {
  CHECK_THROWS_AS(summarize({}, bench_options{}), cotune::error);
  CHECK_THROWS_AS(quantile_of_sorted({}, 0.5), cotune::error);
}

TEST_CASE("an infinite sample does not turn quantiles into NaN", "[bench][summary]") {
  const std::vector<double> s{1, inf};
  CHECK(quantile_of_sorted(s, 0.0) == 1.0);
  CHECK(quantile_of_sorted(s, 1.0) == inf);
  CHECK(quantile_of_sorted(s, 0.5) == inf);
  const std::vector<double> three{1, 2, inf};
  CHECK(quantile_of_sorted(three, 0.5) == 2.0);
  CHECK(std::isinf(summarize(three, mode(return_mode::mean))[0]));
  CHECK(summarize(three, mode(return_mode::min))[0] == 1.0);
}

TEST_CASE("quantiles never come out of order, and equal samples are their own quantiles", "[bench][summary]") {
  // Equal samples (a kernel whose every run reads the same on a coarse clock) are every quantile.
  // Interpolating as (1 - frac) * a + frac * b gave, of {0.1, 0.1}, p20 = 0.10000000000000002: above the
  // median; of 42 samples of 0.0123, p80 = 0.012299999999999998: below it.
  for (double v : {0.1, 0.0123, 0.3, 1e-3, 0.7})
    for (std::size_t n = 1; n < 200; ++n) {
      const std::vector<double> same(n, v);
      for (double q : {0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0}) {
        INFO(n << " samples of " << v << ", quantile " << q);
        CHECK(quantile_of_sorted(same, q) == v);
      }
    }
  // Samples from two clock ticks, many equal: p20 <= median <= p80 for every size and mix.
  for (std::size_t n = 2; n < 400; ++n) {
    std::vector<double> s;
    for (std::size_t i = 0; i < n; ++i) s.push_back(0.0123 * static_cast<double>(1 + (i * 7 % 3 == 0)));
    const auto q = summarize(s, bench_options{.quantiles = {0.5, 0.2, 0.8}});
    INFO("n = " << n);
    CHECK(q[1] <= q[0]);
    CHECK(q[0] <= q[2]);
  }
}
