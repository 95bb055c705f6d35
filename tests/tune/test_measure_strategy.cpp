// Tests for cotune/tune/measure_strategy.hpp: which budget the first pass gets and who reaches the finals.

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include <cotune/tune/measure_strategy.hpp>

using namespace cotune;

namespace {

candidate_result measured(int i, double median) {
  candidate_result r{config{{"I", i}}};
  r.status = candidate_status::ok;
  r.time = {median, median, median};
  return r;
}

candidate_result failed(int i) {
  candidate_result r{config{{"I", i}}};
  r.status = candidate_status::compile_error;
  return r;
}

const bench_options full{.warmup_ms = 25, .rep_ms = 100};

} // namespace

TEST_CASE("exhaustive measurement gives every candidate the full budget once", "[tune][measure_strategy]") {
  const exhaustive_measure m;
  const auto pass = m.first_pass(full, 16);
  CHECK(pass.rep_ms == full.rep_ms);
  CHECK(pass.warmup_ms == full.warmup_ms);
  CHECK(m.finalists({measured(0, 1), measured(1, 2), measured(2, 3)}, full).empty());
}

TEST_CASE("screening: a short first pass, then the close ones, at most keep, in config order", "[tune][measure_strategy]") {
  const screening_measure m(10, 0.15, 2);
  const auto pass = m.first_pass(full, 5);
  CHECK(pass.rep_ms == 10);
  CHECK(pass.warmup_ms == 2.5);
  // 1.0 is best; 1.1 and 1.14 are within 15%; 1.2 is not; keep = 2 keeps the best two by screening.
  const std::vector<candidate_result> rs{measured(0, 1.14), failed(1), measured(2, 1.0), measured(3, 1.2),
                                         measured(4, 1.1)};
  CHECK(m.finalists(rs, full) == std::vector<std::size_t>{2, 4});
  // A lone finalist is still measured again (its stored timing is a full-budget one).
  CHECK(m.finalists({measured(0, 1), measured(1, 5), measured(2, 9)}, full) == std::vector<std::size_t>{0});
  // Nothing measured: no finals.
  CHECK(m.finalists({failed(0), failed(1), failed(2)}, full).empty());
}

TEST_CASE("screening is off for two candidates or fewer and when the budget is already short", "[tune][measure_strategy]") {
  const screening_measure m(10, 0.15, 4);
  CHECK(m.first_pass(full, 2).rep_ms == full.rep_ms);
  CHECK(m.finalists({measured(0, 1), measured(1, 1.01)}, full).empty());
  const bench_options short_budget{.warmup_ms = 1, .rep_ms = 15};
  CHECK(m.first_pass(short_budget, 8).rep_ms == 15);
  CHECK(m.finalists({measured(0, 1), measured(1, 1), measured(2, 1)}, short_budget).empty());
  const screening_measure off(0, 0.15, 4);
  CHECK(off.first_pass(full, 8).rep_ms == full.rep_ms);
}

namespace {
/// A user's strategy that names candidates it should not: failed ones, out of range, twice, unsorted.
class careless_measure final : public measure_strategy {
protected:
  bench_options do_first_pass(const bench_options& f, std::size_t) const override { return f; }
  std::vector<std::size_t> do_finalists(const std::vector<candidate_result>&, const bench_options&) const override {
    return {7, 2, 1, 2, 99, 0};
  }
};
} // namespace

TEST_CASE("finals never include a failed, unknown or repeated candidate, whatever a strategy says", "[tune][measure_strategy]") {
  const careless_measure m;
  CHECK(m.finalists({measured(0, 1), failed(1), measured(2, 3)}, full) == std::vector<std::size_t>{0, 2});
}
