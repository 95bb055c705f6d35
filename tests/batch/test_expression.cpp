// The integer expressions of job files: precedence, names, and refusals that name the column.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

#include <cotune/batch/expression.hpp>

using cotune::batch::expression;
using cotune::batch::expression_error;

namespace {
std::int64_t eval(std::string_view text, std::int64_t n = 0) {
  return expression::parse(text).evaluate([n](std::string_view name) -> std::optional<std::int64_t> {
    if (name == "n") return n;
    if (name == "BLOCK") return 64;
    return std::nullopt;
  });
}
} // namespace

TEST_CASE("expressions follow C's precedence and operators", "[job][expression]") {
  CHECK(eval("1 + 2 * 3") == 7);
  CHECK(eval("(1 + 2) * 3") == 9);
  CHECK(eval("n * n / 4 - 1", 8) == 15);
  CHECK(eval("-n % 3", 7) == -1);
  CHECK(eval("BLOCK * 2 <= n && n % 4 == 0", 128) == 1);
  CHECK(eval("BLOCK * 2 <= n && n % 4 == 0", 100) == 0);
  CHECK(eval("!(n > 3) || BLOCK != 64", 5) == 0);
  CHECK(eval("true + false + 2 >= 3") == 1);
  CHECK(expression::constant(42).evaluate({}) == 42);
  CHECK(expression::parse("M * K + n").names() == std::vector<std::string>{"M", "K", "n"});
}

TEST_CASE("a malformed expression is refused with its column", "[job][expression]") {
  auto column_of = [](std::string_view text) {
    try {
      (void)expression::parse(text);
    } catch (const expression_error& e) {
      return e.column();
    }
    FAIL("'" << text << "' parsed");
    return std::size_t{0};
  };
  CHECK(column_of("n *") == 3);
  CHECK(column_of("n & 2") == 2);
  CHECK(column_of("(n + 1") == 6);
  CHECK(column_of("2n") == 1);
  CHECK(column_of("n # 3") == 2);
}

TEST_CASE("evaluation refuses unknown names, division by zero and overflow", "[job][expression]") {
  CHECK_THROWS_WITH(eval("m + 1"), Catch::Contains("'m' names no variable"));
  CHECK_THROWS_WITH(eval("4 / (n - n)", 3), Catch::Contains("division by zero"));
  CHECK_THROWS_WITH(eval("n * n * n", std::int64_t{1} << 30), Catch::Contains("overflow"));
  CHECK_THROWS_WITH(eval("99999999999999999999"), Catch::Contains("too large"));
}

TEST_CASE("cdiv, min and max take two arguments; cdiv counts blocks", "[job][expression]") {
  CHECK(eval("cdiv(n, BLOCK)", 1000) == 16);
  CHECK(eval("cdiv(n, BLOCK)", 1024) == 16);
  CHECK(eval("cdiv(n, BLOCK)", 1025) == 17);
  CHECK(eval("cdiv(n, BLOCK)", 0) == 0);
  CHECK(eval("cdiv(n - 10, 4)", 3) == 0); // no blocks for nothing, as cotune::cdiv
  CHECK(eval("min(n, BLOCK) + max(n, BLOCK)", 10) == 74);
  CHECK(eval("2 * cdiv(min(n, 100), max(BLOCK / 8, 1)) + 1", 33) == 11);
  CHECK(expression::parse("cdiv(M, BLOCK_M)").names() == std::vector<std::string>{"M", "BLOCK_M"});
  CHECK_THROWS_WITH(eval("cdiv(n, n - n)", 5), Catch::Contains("cdiv(5, 0)") && Catch::Contains("divisor must be positive"));
  CHECK_THROWS_WITH(expression::parse("cdiv(n)"), Catch::Contains("takes two arguments"));
  CHECK_THROWS_WITH(expression::parse("ceil(n, 2)"), Catch::Contains("unknown function 'ceil'") &&
                                                         Catch::Contains("cdiv, min and max"));
  CHECK_THROWS_WITH(expression::parse("min(n, 2"), Catch::Contains("missing ')'"));
  CHECK_THROWS_WITH(eval("cdiv + 1"), Catch::Contains("'cdiv' names no variable")); // a name, without '('
}
