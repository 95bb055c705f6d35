// Tests for parameter kinds (core/param_kind.hpp): which axes are categorical, what one step and a
// distance mean on them, how config_space and job files declare them, and that every registered
// strategy treats a categorical axis's values as unrelated (no step "by distance").

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cotune/core/config_space.hpp>
#include <cotune/job/job_spec.hpp>
#include <cotune/search/search.hpp>

using namespace cotune;

namespace {

/// METHOD (4 values) x BLOCK (5) x WARPS (3): 60 candidates; METHOD's values relabelled by `label`.
std::vector<config> selector_configs(const std::vector<int>& label = {0, 1, 2, 3}) {
  std::vector<config> out;
  for (int m = 0; m < 4; ++m)
    for (int block : {16, 32, 64, 128, 256})
      for (int warps : {1, 2, 4}) out.push_back(config{{"METHOD", label[m]}, {"BLOCK", block}, {"WARPS", warps}});
  return out;
}

/// A time per candidate index (the same whatever the labels): method 0 best around BLOCK 32.
double selector_time(std::size_t i) {
  const double m = static_cast<double>(i / 15), b = static_cast<double>((i / 3) % 5), w = static_cast<double>(i % 3);
  const double base[] = {1.0, 1.8, 1.5, 1.1};
  return base[i / 15] * (1 + 0.05 * (b - 1 - m) * (b - 1 - m) + 0.04 * (w - 1) * (w - 1));
}

std::vector<std::size_t> proposals(const search_strategy& s, const search_space& sp, std::size_t budget, std::uint64_t seed) {
  std::vector<std::size_t> out;
  for (const auto& o : run_search(s, sp, {.evaluations = budget, .seed = seed},
                                  [](std::size_t i) { return search_outcome{i, selector_time(i), true}; }, 3, 1))
    out.push_back(o.index);
  return out;
}

std::size_t axis_of(const search_space& s, const std::string& name) {
  for (std::size_t d = 0; d < s.dimensions(); ++d)
    if (s.axes()[d].name == name) return d;
  FAIL("no axis " << name);
  return 0;
}

} // namespace

TEST_CASE("strings and booleans are categorical, numbers ordered unless declared", "[search][kinds]") {
  std::vector<config> cs; // a full product, so that no two axes are tied
  for (int m : {1, 2, 3})
    for (const char* l : {"row", "col"})
      for (bool f : {false, true}) cs.push_back(config{{"M", m}, {"L", l}, {"F", f}});
  const search_space plain(cs);
  CHECK(plain.axes()[axis_of(plain, "M")].kind == param_kind::ordered);
  CHECK(plain.axes()[axis_of(plain, "L")].kind == param_kind::categorical);
  CHECK(plain.axes()[axis_of(plain, "F")].kind == param_kind::categorical);
  const search_space declared(cs, {{"M", param_kind::categorical}, {"L", param_kind::ordered}});
  CHECK(declared.axes()[axis_of(declared, "M")].kind == param_kind::categorical);
  CHECK(declared.axes()[axis_of(declared, "L")].kind == param_kind::ordered);
}

TEST_CASE("a step on a categorical axis reaches every other value, and any two values are a whole axis apart",
          "[search][kinds]") {
  const auto cs = selector_configs();
  const search_space ordered(cs), categorical(cs, {{"METHOD", param_kind::categorical}});
  const std::size_t m = axis_of(ordered, "METHOD");
  // Candidate 15: METHOD 1, BLOCK 16, WARPS 1. Its METHOD neighbours: 0 and 2 (ordered), 0, 2, 3 (categorical).
  auto methods = [&](const search_space& s, std::size_t i) {
    std::vector<int> out;
    for (std::size_t j : s.neighbours(i))
      if (s.coords(j)[m] != s.coords(i)[m]) out.push_back(static_cast<int>(cs[j].at("METHOD").as_int()));
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(methods(ordered, 15) == std::vector<int>{0, 2});
  CHECK(methods(categorical, 15) == std::vector<int>{0, 2, 3});
  CHECK(categorical.along(15, m) == std::vector<std::size_t>{0, 30, 45});
  // METHOD 0 against 1 and against 3, the rest alike: a third and a whole axis when ordered, 1 and 1 when not.
  CHECK(ordered.distance(ordered.coords(0), ordered.coords(15)) == Approx(1.0 / 3));
  CHECK(ordered.distance(ordered.coords(0), ordered.coords(45)) == Approx(1.0));
  CHECK(categorical.distance(categorical.coords(0), categorical.coords(15)) == Approx(1.0));
  CHECK(categorical.distance(categorical.coords(0), categorical.coords(45)) == Approx(1.0));
}

TEST_CASE("config_space declares categorical numbers, and the candidates are the same", "[search][kinds][config_space]") {
  const auto space = config_space{}.categorical("METHOD", {0, 1, 2, 3}).axis("BLOCK", {16, 32});
  CHECK(space.kinds() == param_kinds{{"METHOD", param_kind::categorical}});
  CHECK(space.build() == config_space{}.axis("METHOD", {0, 1, 2, 3}).axis("BLOCK", {16, 32}).build());
  CHECK(config_space{}.axis("BLOCK", {16, 32}).kinds().empty());
  CHECK_THROWS_WITH(config_space{}.categorical("METHOD", {}), Catch::Contains("METHOD") && Catch::Contains("no values"));
  const search_space s(space.build(), space.kinds());
  CHECK(s.axes()[axis_of(s, "METHOD")].categorical());
  CHECK_FALSE(s.axes()[axis_of(s, "BLOCK")].categorical());
}

TEST_CASE("a job file's space names its categorical axes", "[search][kinds][job]") {
  const auto job = [](const std::string& space) {
    return R"({"name": "kinds", "kernels": [{"name": "k", "code": "extern \"C\" void k(float* x, int n) {}",
      "space": )" + space + R"(, "arguments": [{"name": "x", "buffer": "float32", "extent": "n"},
      {"name": "n", "scalar": "int32", "value": "n"}], "instances": [{"n": 16}]}]})";
  };
  const auto spec = job::job_spec::parse(job(R"({"axes": {"METHOD": [0, 1, 2], "BLOCK": [16, 32]}, "categorical": ["METHOD"]})"),
                                         "kinds.job.json");
  REQUIRE(spec.kernels.size() == 1);
  CHECK(spec.kernels[0].kinds == param_kinds{{"METHOD", param_kind::categorical}});
  CHECK(job::job_spec::parse(job(R"({"axes": {"METHOD": [0, 1]}})"), "k.json").kernels[0].kinds.empty());
  CHECK_THROWS_WITH(job::job_spec::parse(job(R"({"axes": {"METHOD": [0, 1]}, "categorical": ["METHD"]})"), "k.json"),
                    Catch::Contains("categorical") && Catch::Contains("'METHD' is not an axis"));
  CHECK_THROWS_WITH(job::job_spec::parse(job(R"({"axes": {"METHOD": [0, 1]}, "categorical": "METHOD"})"), "k.json"),
                    Catch::Contains("expected a list of axis names"));
}

TEST_CASE("no strategy steps by distance on a categorical axis: relabelling its values changes no proposal",
          "[search][kinds]") {
  // The same candidates in the same order with the same times, METHOD's numbers permuted: a strategy
  // that treats METHOD as unordered proposes the same indices; one that walks its numbers does not.
  const std::vector<int> permuted{2, 0, 3, 1};
  const param_kinds categorical{{"METHOD", param_kind::categorical}};
  const auto plain = selector_configs(), relabelled = selector_configs(permuted);
  const search_space a(plain, categorical), b(relabelled, categorical);
  const search_space a_ordered(plain), b_ordered(relabelled);
  std::size_t differs_when_ordered = 0;
  for (const auto& name : search_registry::instance().names()) {
    INFO(name);
    const auto s = search_named(name);
    for (std::uint64_t seed : {1, 2, 3}) {
      CHECK(proposals(*s, a, 30, seed) == proposals(*s, b, 30, seed));
      if (proposals(*s, a_ordered, 30, seed) != proposals(*s, b_ordered, 30, seed)) ++differs_when_ordered;
    }
  }
  CHECK(differs_when_ordered > 0); // the check above can fail: ordered axes are walked by number
}

TEST_CASE("local search steps from a method to any other in one move", "[search][kinds][local]") {
  // Every candidate measured but the best of method 3; from method 0's best, ordered METHOD would need
  // three steps through slower methods, categorical one.
  const auto cs = selector_configs();
  const search_space s(cs, {{"METHOD", param_kind::categorical}});
  const std::size_t m = axis_of(s, "METHOD");
  for (std::size_t i : s.neighbours(3))
    if (s.coords(i)[m] != s.coords(3)[m]) CHECK(cs[i].at("BLOCK") == cs[3].at("BLOCK"));
  const auto n = s.neighbours(3);
  CHECK(std::find(n.begin(), n.end(), std::size_t{48}) != n.end()); // METHOD 3, same BLOCK and WARPS
}
