// Tests for cotune/core/config_space.hpp: candidate lists as filtered cartesian products.

#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include <cotune/core/config_space.hpp>

using cotune::config;
using cotune::config_space;
using cotune::launch_options;

namespace {

std::vector<std::string> texts(const std::vector<config>& configs) {
  std::vector<std::string> out;
  for (const auto& c : configs) out.push_back(c.text());
  return out;
}

} // namespace

TEST_CASE("the product runs in axis order with the last axis fastest", "[core][config_space]") {
  const auto space = config_space{}.axis("A", {1, 2}).axis("B", {10, 20, 30});
  CHECK(space.product_size() == 6);
  const auto configs = space.build();
  REQUIRE(configs.size() == 6);
  const std::vector<std::pair<int, int>> expected{{1, 10}, {1, 20}, {1, 30}, {2, 10}, {2, 20}, {2, 30}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(i);
    CHECK(configs[i].at("A").as_int() == expected[i].first);
    CHECK(configs[i].at("B").as_int() == expected[i].second);
    CHECK(configs[i].launch() == launch_options{});
  }
}

TEST_CASE("axes keep the kinds of their values", "[core][config_space]") {
  const auto configs = config_space{}.axis("MODE", {"fast", "exact"}).axis("SCALE", {1.0, 2}).axis("ON", {true}).build();
  CHECK(texts(configs) == std::vector<std::string>{
                              R"(MODE: "fast", ON: true, SCALE: 1.0, num_warps: 4, num_stages: 3, num_ctas: 1)",
                              R"(MODE: "fast", ON: true, SCALE: 2, num_warps: 4, num_stages: 3, num_ctas: 1)",
                              R"(MODE: "exact", ON: true, SCALE: 1.0, num_warps: 4, num_stages: 3, num_ctas: 1)",
                              R"(MODE: "exact", ON: true, SCALE: 2, num_warps: 4, num_stages: 3, num_ctas: 1)",
                          });
}

TEST_CASE("launch axes set launch options and mix with parameter axes", "[core][config_space]") {
  const auto configs =
      config_space{}.num_warps({4, 8}).axis("BLOCK", {32, 64}).num_stages({2}).num_ctas({1, 2}).build();
  REQUIRE(configs.size() == 8);
  CHECK(configs[0].launch().num_warps == 4);
  CHECK(configs[0].launch().num_stages == 2);
  CHECK(configs[0].launch().num_ctas == 1);
  CHECK(configs[0].at("BLOCK").as_int() == 32);
  CHECK(configs[1].launch().num_ctas == 2);
  CHECK(configs[2].at("BLOCK").as_int() == 64);
  CHECK(configs[4].launch().num_warps == 8);
  CHECK(configs[7].text() == "BLOCK: 64, num_warps: 8, num_stages: 2, num_ctas: 2");
}

TEST_CASE("predicates keep only the configs every one of them accepts", "[core][config_space]") {
  int calls = 0;
  const auto configs = config_space{}
                           .axis("BLOCK", {16, 32, 64})
                           .axis("UNROLL", {1, 2, 4})
                           .num_warps({4, 8})
                           .where([&](const config& c) {
                             ++calls;
                             return c.at("BLOCK").as_int() * c.at("UNROLL").as_int() <= 64;
                           })
                           .where([](const config& c) { return c.launch().num_warps == 4 || c.at("BLOCK").as_int() == 64; })
                           .build();
  CHECK(calls == 18); // every combination is seen once by the first predicate
  std::vector<std::string> expected{
      "BLOCK: 16, UNROLL: 1, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 16, UNROLL: 2, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 16, UNROLL: 4, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 32, UNROLL: 1, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 32, UNROLL: 2, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 64, UNROLL: 1, num_warps: 4, num_stages: 3, num_ctas: 1",
      "BLOCK: 64, UNROLL: 1, num_warps: 8, num_stages: 3, num_ctas: 1",
  };
  CHECK(texts(configs) == expected);
}

TEST_CASE("predicates that reject everything are an error naming the count", "[core][config_space]") {
  auto space = config_space{}.axis("A", {1, 2, 3}).num_warps({4, 8}).where([](const config&) { return false; });
  CHECK_THROWS_WITH(space.build(), Catch::Contains("rejected all 6 combinations"));
}

TEST_CASE("bad axes are refused when added", "[core][config_space]") {
  CHECK_THROWS_WITH(config_space{}.axis("A", {}), Catch::Contains("'A' has no values"));
  CHECK_THROWS_WITH(config_space{}.num_warps({}), Catch::Contains("'num_warps' has no values"));
  CHECK_THROWS_WITH(config_space{}.axis("A-B", {1}), Catch::Contains("not a C identifier"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).axis("A", {2}), Catch::Contains("'A' is given twice"));
  CHECK_THROWS_WITH(config_space{}.num_stages({1}).num_stages({2}), Catch::Contains("'num_stages' is given twice"));
  CHECK_THROWS_AS(config_space{}.axis("X", {std::numeric_limits<double>::quiet_NaN()}), cotune::error);
}

TEST_CASE("a space without axes has no combinations", "[core][config_space]") {
  CHECK(config_space{}.product_size() == 0);
  CHECK(config_space{}.build().empty());
}

TEST_CASE("derive sets launch options and parameters from other parameters", "[core][config_space][derive]") {
  using cotune::p;
  const auto configs = config_space{}
                           .axis("BLOCK_X", {16, 32})
                           .axis("BLOCK_Y", {4, 8})
                           .axis("TILE", {1, 2})
                           .derive("block_x", p("BLOCK_X"))
                           .derive("block_y", p("BLOCK_Y"))
                           .derive("ROWS", p("BLOCK_Y") * p("TILE"))
                           .derive("num_stages", [](const config& c) { return c.at("TILE").as_int() + 1; })
                           .where([](const config& c) { return c.at("ROWS").as_int() <= 8; })
                           .build();
  // ROWS = BLOCK_Y * TILE <= 8 drops (8, 2): 2 x (2 + 1) configs remain.
  REQUIRE(configs.size() == 6);
  for (const auto& c : configs) {
    INFO(c.text());
    REQUIRE(c.launch().block.has_value());
    CHECK(c.launch().block->x == c.at("BLOCK_X").as_int());
    CHECK(c.launch().block->y == c.at("BLOCK_Y").as_int());
    CHECK(c.launch().block->z == 1);
    CHECK(c.launch().threads() == c.at("BLOCK_X").as_int() * c.at("BLOCK_Y").as_int());
    CHECK(c.at("ROWS").as_int() == c.at("BLOCK_Y").as_int() * c.at("TILE").as_int());
    CHECK(c.launch().num_stages == c.at("TILE").as_int() + 1);
  }
  CHECK(configs.front().text() ==
        "BLOCK_X: 16, BLOCK_Y: 4, ROWS: 4, TILE: 1, num_warps: 4, num_stages: 2, num_ctas: 1, block: 16x4x1");
}

TEST_CASE("derived threads and num_warps use the issue's generic-lambda form", "[core][config_space][derive]") {
  const auto configs = config_space{}
                           .axis("block_size_x", {8, 16})
                           .axis("block_size_y", {8})
                           .derive("threads", [](auto& c) {
                             return c.at("block_size_x").as_int() * c.at("block_size_y").as_int();
                           })
                           .derive("num_warps", [](auto& c) { return c.launch().threads() / 32; })
                           .build();
  REQUIRE(configs.size() == 2);
  CHECK(configs[0].launch().threads_per_block == 64);
  CHECK(configs[1].launch().threads_per_block == 128);
  CHECK(configs[1].launch().num_warps == 4);
  CHECK_FALSE(configs[0].launch().block.has_value());
}

TEST_CASE("derive refuses clashes and bad derived values with the reason", "[core][config_space][derive]") {
  using cotune::p;
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).derive("A", p("A")), Catch::Contains("both an axis and derived"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).derive("B", p("A")).derive("B", p("A")),
                    Catch::Contains("derived twice"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).derive("not an id", p("A")), Catch::Contains("C identifier"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {0}).derive("block_y", p("A")).build(),
                    Catch::Contains("block dimension must be >= 1") && Catch::Contains("A: 0"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).derive("num_warps", [](const config&) { return 1.5; }).build(),
                    Catch::Contains("derived launch option 'num_warps'"));
  CHECK_THROWS_WITH(config_space{}.axis("A", {1}).derive("B", p("C")).build(), Catch::Contains("no parameter 'C'"));
}

TEST_CASE("categorical declares an axis's numbers unrelated choices, and builds the same candidates",
          "[core][config_space][kinds]") {
  const auto space = config_space{}.categorical("METHOD", {0, 1, 2, 3}).axis("BLOCK", {16, 32});
  CHECK(space.kinds() == cotune::param_kinds{{"METHOD", cotune::param_kind::categorical}});
  CHECK(space.build() == config_space{}.axis("METHOD", {0, 1, 2, 3}).axis("BLOCK", {16, 32}).build());
  CHECK(config_space{}.axis("BLOCK", {16, 32}).axis("LAYOUT", {"row", "col"}).kinds().empty()); // defaults apply
  CHECK_THROWS_WITH(config_space{}.categorical("METHOD", {}), Catch::Contains("'METHOD' has no values"));
  CHECK_THROWS_WITH(config_space{}.categorical("A", {1}).categorical("A", {2}), Catch::Contains("given twice"));
}
