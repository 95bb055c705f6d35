// Tests for the search suite's data files (benchmarks/search_suite/data, read by
// benchmarks/search_suite/suite_data.hpp): every file parses and holds what its header states, and the
// suite as a whole is what issue 35 asks for (8+ spaces of 500-20,000 configs, 5+ kernels, 3+ with
// categorical parameters, 2+ with near-optimal regions far apart). No timings.

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <unistd.h>
#include <string>
#include <vector>

#include <cotune/search/search.hpp>

#include "../../benchmarks/search_suite/suite_data.hpp"

#ifndef COTUNE_SEARCH_SUITE_DATA
#error "tests/CMakeLists.txt defines COTUNE_SEARCH_SUITE_DATA (the data folder)"
#endif

using cotune_bench::load_suite_space;
using cotune_bench::suite_files;

TEST_CASE("every data file of the search suite parses and holds the sizes, optimum and kinds its header states",
          "[search][search_suite]") {
  const auto files = suite_files(COTUNE_SEARCH_SUITE_DATA);
  REQUIRE(files.size() >= 8);
  for (const auto& f : files) {
    INFO(f.string());
    const auto s = load_suite_space(f);
    CHECK(s.name == f.stem().string());
    CHECK(s.configs.size() == s.stated_size);
    CHECK(s.valid() == s.stated_valid);
    CHECK(s.configs.size() >= 500);
    CHECK(s.configs.size() <= 20000);
    REQUIRE(s.valid() > 0);
    CHECK(s.optimum() == Approx(s.stated_optimum).epsilon(1e-9));
    CHECK_FALSE(s.licence.empty());
    CHECK_FALSE(s.source_url.empty());
    for (const auto& p : s.params) {
      INFO(p.name);
      CHECK(p.values.size() >= 2); // a parameter with one value is listed under "fixed"
    }
    // every config once
    std::set<std::string> seen;
    for (const auto& c : s.configs) seen.insert(c.text());
    CHECK(seen.size() == s.configs.size());
  }
}

TEST_CASE("the search suite covers 5 kernels, 3 spaces with categorical parameters and 2 with far-apart optima",
          "[search][search_suite]") {
  std::set<std::string> kernels;
  int categorical = 0, far_apart = 0;
  for (const auto& f : suite_files(COTUNE_SEARCH_SUITE_DATA)) {
    const auto s = load_suite_space(f);
    kernels.insert(s.family);
    categorical += s.categorical_params() > 0 ? 1 : 0;
    // two regions of configs within 2% of the optimum, at least one whole axis apart
    far_apart += s.near_optimal_regions >= 2 && s.near_optimal_distance >= 1.0 ? 1 : 0;
  }
  INFO(kernels.size() << " kernels");
  CHECK(kernels.size() >= 5);
  CHECK(categorical >= 3);
  CHECK(far_apart >= 2);
}

TEST_CASE("a space's declared categorical parameters become categorical axes of its search space",
          "[search][search_suite]") {
  const auto s = load_suite_space(std::filesystem::path(COTUNE_SEARCH_SUITE_DATA) / "pnpoly-rtx3090.json");
  cotune::param_kinds kinds;
  for (const auto& p : s.params) kinds[p.name] = p.categorical ? cotune::param_kind::categorical : cotune::param_kind::ordered;
  const cotune::search_space geometry(s.configs, kinds);
  std::set<std::string> categorical_axes;
  for (const auto& a : geometry.axes())
    if (a.categorical()) categorical_axes.insert(a.name);
  CHECK(categorical_axes == std::set<std::string>{"between_method", "use_method"});
}

TEST_CASE("a malformed data file is refused with the file and the field named", "[search][search_suite]") {
  const auto dir = std::filesystem::temp_directory_path() / ("cotune_suite_data_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "bad.json";
  auto write = [&](const std::string& results) {
    std::ofstream(file) << R"({"format": "cotune-search-suite-1", "name": "bad", "description": "d",
      "source": {"url": "u", "licence": "l", "kernel": "k", "family": "k", "gpu": "g"}, "size": 2, "valid": 1, "optimum": 1.0,
      "near_optimal": {"within_2pct": 1, "regions": 1, "max_region_distance": 0},
      "params": [{"name": "A", "kind": "ordered", "values": [1, 2]}], "results": )"
                        << results << "}";
  };
  write("[[0, 1.0], [1, null]]");
  CHECK(load_suite_space(file).configs.size() == 2);
  write("[[0, 1.0], [2, null]]"); // index 2 of a 2-valued parameter
  CHECK_THROWS_WITH(load_suite_space(file), Catch::Contains("bad.json") && Catch::Contains("results[1]") &&
                                                Catch::Contains("index for A must be below 2"));
  write("[[0, 1.0], [1, -3]]");
  CHECK_THROWS_WITH(load_suite_space(file), Catch::Contains("positive number or null"));
  std::ofstream(file) << R"({"format": "cotune-search-suite-1", "name": "bad"})";
  CHECK_THROWS_WITH(load_suite_space(file), Catch::Contains("missing field \"description\""));
  std::filesystem::remove_all(dir);
}
