// Tests for cotune/core/grid_expr.hpp: integer expressions over a config's parameters.

#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>

#include <cotune/core/grid_expr.hpp>

using cotune::config;
using cotune::p;

TEST_CASE("an expression combines parameters and integers", "[core][grid_expr]") {
  const config c{{"BLOCK_X", 16}, {"TILE_X", 4}, {"BLOCK_Y", 8}};
  const std::int64_t n = 1000;
  CHECK(cotune::eval(p("BLOCK_X"), c) == 16);
  CHECK(cotune::eval(p("BLOCK_X") * p("TILE_X"), c) == 64);
  CHECK(cotune::eval(cdiv(n, p("BLOCK_X") * p("TILE_X")), c) == 16); // 1000 / 64 = 15.6
  CHECK(cotune::eval(cdiv(1024, p("BLOCK_X") * p("TILE_X")), c) == 16);
  CHECK(cotune::eval(cdiv(1025, p("BLOCK_X") * p("TILE_X")), c) == 17);
  CHECK(cotune::eval(p("BLOCK_X") + 2 * p("BLOCK_Y") - 1, c) == 31);
  CHECK(cotune::eval(n / p("BLOCK_Y") % 7, c) == 125 % 7);
  CHECK(cotune::eval(cotune::min_of(p("BLOCK_X"), p("BLOCK_Y")), c) == 8);
  CHECK(cotune::eval(cotune::max_of(p("BLOCK_X"), 100), c) == 100);
  CHECK(cotune::eval(42, c) == 42);
  CHECK(cotune::eval(cdiv(0, p("BLOCK_X")), c) == 0);
  CHECK(cotune::eval(cdiv(-5, p("BLOCK_X")), c) == 0);
  // The same expression under another config gives that config's value.
  const config d{{"BLOCK_X", 32}, {"TILE_X", 2}, {"BLOCK_Y", 8}};
  const auto e = cdiv(n, p("BLOCK_X") * p("TILE_X"));
  CHECK(e(c) == 16);
  CHECK(e(d) == 16);
  CHECK(e(config{{"BLOCK_X", 1}, {"TILE_X", 1}}) == 1000);
}

TEST_CASE("cdiv of two integers counts blocks, at compile time too", "[core][grid_expr]") {
  static_assert(cotune::cdiv(10, 4) == 3 && cotune::cdiv(8, 4) == 2 && cotune::cdiv(0, 4) == 0 &&
                cotune::cdiv(1, 1024) == 1);
  CHECK(cotune::cdiv(10, 4) == 3);
  CHECK(cotune::cdiv(-5, 4) == 0);
  CHECK(cotune::cdiv(std::int64_t{1} << 40, 1) == std::int64_t{1} << 40); // a grid's limit is checked at launch
  CHECK_THROWS_WITH(cotune::cdiv(10, 0), Catch::Contains("cdiv(10, 0)") && Catch::Contains("divisor must be positive"));
}

TEST_CASE("a boolean parameter counts as 0 or 1", "[core][grid_expr]") {
  const config c{{"SHARED", true}, {"BLOCK", 4}};
  CHECK(cotune::eval(p("SHARED") * p("BLOCK") * 1024, c) == 4096);
}

TEST_CASE("expressions refuse what they cannot evaluate, naming the config", "[core][grid_expr]") {
  const config c{{"BLOCK", 0}, {"MODE", "fast"}, {"SCALE", 1.5}};
  CHECK_THROWS_WITH(cotune::eval(cdiv(100, p("BLOCK")), c),
                    Catch::Contains("cdiv(100, 0)") && Catch::Contains("BLOCK: 0") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(cotune::eval(100 / p("BLOCK"), c), Catch::Contains("division by zero"));
  CHECK_THROWS_WITH(cotune::eval(100 % p("BLOCK"), c), Catch::Contains("remainder by zero"));
  CHECK_THROWS_WITH(cotune::eval(p("MODE") * 2, c),
                    Catch::Contains("parameter 'MODE'") && Catch::Contains("needs an integer"));
  CHECK_THROWS_WITH(cotune::eval(p("SCALE"), c), Catch::Contains("parameter 'SCALE'"));
  CHECK_THROWS_WITH(cotune::eval(p("MISSING"), c), Catch::Contains("no parameter 'MISSING'"));
}

TEST_CASE("expression types are recognised and integers alone are not expressions", "[core][grid_expr]") {
  static_assert(cotune::grid_expression<cotune::param_ref>);
  static_assert(cotune::grid_expression<decltype(p("A") * 2)>);
  static_assert(cotune::grid_expression<decltype(cdiv(10, p("A")))>);
  static_assert(!cotune::grid_expression<int>);
  // Evaluating allocates nothing: expressions are trivially copyable values.
  static_assert(std::is_trivially_copyable_v<decltype(cdiv(10, p("A") * p("B")) + 1)>);
  CHECK(cotune::eval(cdiv(10, p("A")), config{{"A", 3}}) == 4);
}

TEST_CASE("expr::p and the _p literal build the same expressions without taking the name p", "[core][grid_expr]") {
  using namespace cotune::expr::literals; // brings "..."_p only
  const config c{{"BLOCK_X", 16}, {"TILE_X", 4}};
  static_assert(std::is_same_v<decltype("BLOCK_X"_p), cotune::param_ref>);
  static_assert(("BLOCK_X"_p).name == "BLOCK_X");
  CHECK(cotune::eval("BLOCK_X"_p * "TILE_X"_p, c) == 64);
  CHECK(cotune::eval(cotune::expr::cdiv(1000, cotune::expr::p("BLOCK_X") * "TILE_X"_p), c) == 16);
  {
    using namespace cotune::expr; // p, cdiv, min_of, max_of, eval and the literal, in one function's scope
    CHECK(eval(min_of(p("BLOCK_X"), "TILE_X"_p), c) == 4);
    CHECK(eval(max_of(p("BLOCK_X"), 100), c) == 100);
  }
  // The older spelling is the same function.
  CHECK(cotune::eval(cotune::p("TILE_X"), c) == cotune::eval(cotune::expr::p("TILE_X"), c));
}
