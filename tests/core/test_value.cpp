// Tests for cotune/core/value.hpp: one configuration parameter.

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <cotune/core/value.hpp>

using cotune::value;

TEST_CASE("integers and floating values are distinct kinds: 2 is not 2.0", "[core][value]") {
  CHECK(value(2).is_int());
  CHECK(value(2.0).is_double());
  CHECK(value(2) != value(2.0));
  CHECK(value(2) == value(std::int64_t{2}));
  CHECK(value(short{2}) == value(2));
  CHECK(value(2u) == value(2));
  CHECK(value(2.0f) == value(2.0));
  CHECK(value(true) != value(1));
  CHECK(value("1") != value(1));
  CHECK(value(true).is_bool());
  CHECK(value("x").is_string());
  CHECK(value(std::string_view("x")) == value(std::string("x")));
  CHECK(value().is_int());
  CHECK(value().as_int() == 0);
}

TEST_CASE("the canonical text marks kinds apart", "[core][value]") {
  CHECK(value(64).text() == "64");
  CHECK(value(-3).text() == "-3");
  CHECK(value(std::numeric_limits<std::int64_t>::min()).text() == "-9223372036854775808");
  CHECK(value(1.5).text() == "1.5");
  CHECK(value(2.0).text() == "2.0");
  CHECK(value(-0.25).text() == "-0.25");
  CHECK(value(1e300).text() == "1e+300");
  CHECK(value(0.1).text() == "0.1");
  CHECK(value(true).text() == "true");
  CHECK(value(false).text() == "false");
  CHECK(value("fast").text() == "\"fast\"");
  CHECK(value("a\"b\\c\n").text() == R"("a\"b\\c\n")");
  CHECK(value("").text() == "\"\"");
  CHECK(value(7).json() == value(7).text());
  CHECK(fmt::format("{}", value(2.0)) == "2.0");
  CHECK(fmt::format("[{:>6}]", value(12)) == "[    12]");
}

TEST_CASE("macro text is what a -D definition needs", "[core][value]") {
  CHECK(value(64).macro_text() == "64");
  CHECK(value(2.0).macro_text() == "2.0");
  CHECK(value(true).macro_text() == "1");
  CHECK(value(false).macro_text() == "0");
  CHECK(value("float").macro_text() == "float");
}

TEST_CASE("accessors check the kind and name the value in their error", "[core][value]") {
  CHECK(value(3).as_int() == 3);
  CHECK(value(3).as_double() == 3.0);
  CHECK(value(2.5).as_double() == 2.5);
  CHECK(value(true).as_bool());
  CHECK(value("s").as_string() == "s");
  CHECK_THROWS_WITH(value(2.5).as_int(), Catch::Contains("2.5") && Catch::Contains("not an integer"));
  CHECK_THROWS_AS(value(true).as_double(), cotune::error);
  CHECK_THROWS_AS(value("3").as_double(), cotune::error);
  CHECK_THROWS_WITH(value(1).as_bool(), Catch::Contains("not a bool"));
  CHECK_THROWS_WITH(value(1).as_string(), Catch::Contains("not a string"));
}

TEST_CASE("non-finite floating values are refused", "[core][value]") {
  CHECK_THROWS_WITH(value(std::numeric_limits<double>::quiet_NaN()), Catch::Contains("finite"));
  CHECK_THROWS_AS(value(std::numeric_limits<double>::infinity()), cotune::error);
  CHECK_THROWS_AS(value(-std::numeric_limits<double>::infinity()), cotune::error);
  CHECK_THROWS_AS(value(std::numeric_limits<float>::quiet_NaN()), cotune::error);
  CHECK_NOTHROW(value(std::numeric_limits<double>::max()));
  CHECK_NOTHROW(value(std::numeric_limits<double>::denorm_min()));
}

TEST_CASE("negative zero equals zero and shares its text", "[core][value]") {
  CHECK(value(-0.0) == value(0.0));
  CHECK(value(-0.0).text() == value(0.0).text());
  CHECK(value(-0.0).text() == "0.0");
}

TEST_CASE("unsigned integers that do not fit a signed 64-bit parameter are refused", "[core][value]") {
  constexpr auto big = std::uint64_t{1} << 63;
  CHECK_THROWS_WITH(value(big), Catch::Contains("9223372036854775808"));
  CHECK(value(big - 1).as_int() == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("string parameters must be valid UTF-8, since configs are stored as JSON", "[core][value]") {
  CHECK_NOTHROW(value("caf\xC3\xA9 \xF0\x9F\x98\x80"));
  CHECK_THROWS_WITH(value("\xff"), Catch::Contains("UTF-8"));
  CHECK_THROWS_AS(value(std::string("ab\xC3")), cotune::error); // truncated sequence
  CHECK_THROWS_AS(value(std::string_view("\xC0\x80")), cotune::error); // overlong NUL
  CHECK(value(std::string("a\0b", 3)).as_string().size() == 3); // NUL is valid UTF-8
}
