// The integer expressions of job files: precedence, names, and refusals that name the column.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

#include <cotune/job/expression.hpp>

using cotune::job::expression;
using cotune::job::expression_error;

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
