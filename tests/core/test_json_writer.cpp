// Tests for cotune/core/json_writer.hpp: the one JSON writer, read back with simdjson.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <simdjson.h>

#include <cotune/core/json_writer.hpp>

using cotune::json_writer;

TEST_CASE("objects and arrays nest with the house layout", "[core][json_writer]") {
  json_writer w;
  w.begin_object().field("kernel", "saxpy").field("n", 4096).field("ok", true).field("ms", 0.25);
  w.key("timings").begin_array().value(1.5).value(std::numeric_limits<double>::infinity()).null().end_array();
  w.key("empty").begin_object().end_object();
  w.key("nested").begin_array().begin_object().field("a", 1).end_object().begin_array().end_array().end_array();
  w.key("config").raw(R"({"BLOCK": 64})");
  w.end_object();
  CHECK(w.str() == R"({"kernel": "saxpy", "n": 4096, "ok": true, "ms": 0.25, "timings": [1.5, null, null], )"
                   R"("empty": {}, "nested": [{"a": 1}, []], "config": {"BLOCK": 64}})");
}

TEST_CASE("strings are escaped so that a JSON parser reads them back exactly", "[core][json_writer]") {
  const std::string nasty = "quote \" backslash \\ newline \n tab \t nul-free control \x01 caf\xc3\xa9";
  json_writer w;
  w.begin_object().field(nasty, nasty).end_object();
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  REQUIRE(parser.parse(w.str()).get(obj) == simdjson::SUCCESS);
  std::string_view back;
  REQUIRE(obj[nasty].get_string().get(back) == simdjson::SUCCESS);
  CHECK(back == nasty);
}

TEST_CASE("misuse is refused instead of writing broken JSON", "[core][json_writer]") {
  CHECK_THROWS_AS(json_writer{}.begin_object().value(1), std::logic_error);          // a value without a key
  CHECK_THROWS_AS(json_writer{}.begin_array().key("k"), std::logic_error);           // a key in an array
  CHECK_THROWS_AS(json_writer{}.begin_object().key("a").key("b"), std::logic_error); // two keys in a row
  CHECK_THROWS_AS(json_writer{}.begin_array().end_object(), std::logic_error);       // unbalanced
  CHECK_THROWS_AS(json_writer{}.value(1).value(2), std::logic_error);                // two top-level values
  CHECK(std::move(json_writer{}.value(-7)).take() == "-7");
}
