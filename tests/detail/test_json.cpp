// Tests for cotune/detail/json.hpp: the JSON writer, double text and the non-finite normaliser.

#include <catch2/catch.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <simdjson.h>

#include <cotune/detail/json.hpp>

using namespace cotune::detail;

namespace {

/// Parses `text` as a JSON document; fails the test if it does not parse.
simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element e;
  const auto err = parser.parse(text).get(e);
  INFO(text);
  REQUIRE(err == simdjson::SUCCESS);
  return e;
}

} // namespace

TEST_CASE("json_quote escapes what JSON requires and passes UTF-8 through", "[detail][json]") {
  CHECK(json_quoted("plain") == "\"plain\"");
  CHECK(json_quoted("") == "\"\"");
  CHECK(json_quoted("a\"b") == R"("a\"b")");
  CHECK(json_quoted("a\\b") == R"("a\\b")");
  CHECK(json_quoted("\n\r\t\b\f") == R"("\n\r\t\b\f")");
  CHECK(json_quoted(std::string("\x01\x1f\0", 3)) == R"("\u0001\u001f\u0000")");
  CHECK(json_quoted("caf\xC3\xA9") == "\"caf\xC3\xA9\"");
  CHECK(json_quoted("/") == "\"/\"");
  std::string out = "x";
  json_quote(out, "y");
  CHECK(out == "x\"y\"");
}

TEST_CASE("json_quote output reads back as the same string for every ASCII byte", "[detail][json]") {
  std::string all;
  for (int c = 0; c < 128; ++c) all.push_back(static_cast<char>(c));
  all += "caf\xC3\xA9 \xF0\x9F\x98\x80";
  simdjson::dom::parser parser;
  auto e = parse(parser, "[" + json_quoted(all) + "]");
  std::string_view back;
  REQUIRE(e.at(0).get_string().get(back) == simdjson::SUCCESS);
  CHECK(back == all);
}

TEST_CASE("double_text is the shortest text that reads back, always marked as floating", "[detail][json]") {
  CHECK(double_text(2.0) == "2.0");
  CHECK(double_text(0.0) == "0.0");
  CHECK(double_text(-0.0) == "-0.0");
  CHECK(double_text(1.5) == "1.5");
  CHECK(double_text(0.1) == "0.1");
  CHECK(double_text(1e300) == "1e+300");
  CHECK(double_text(1e-7) == "1e-07");
  CHECK(double_text(123456789.0) == "123456789.0");
  CHECK(json_number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(json_number(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(json_number(0.5) == "0.5");

  std::vector<double> values{0.1, 1.0 / 3.0, 2.0 / 3.0, 1e22, 1e23, 5e-324, 2.2250738585072014e-308,
                             std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                             std::numeric_limits<double>::epsilon(), 9007199254740993.0, -123.456};
  std::mt19937_64 rng(42);
  while (values.size() < 2000) {
    const double d = std::bit_cast<double>(rng());
    if (std::isfinite(d)) values.push_back(d);
  }
  simdjson::dom::parser parser;
  for (double d : values) {
    const auto text = double_text(d);
    INFO(text);
    CHECK(text.find_first_of(".e") != std::string::npos);
    double back = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
    CHECK(ec == std::errc{});
    CHECK(end == text.data() + text.size());
    CHECK(std::bit_cast<std::uint64_t>(back) == std::bit_cast<std::uint64_t>(d));
    // simdjson reads it back as a double, bit for bit: configs and timings survive a JSON trip.
    auto e = parse(parser, "[" + text + "]");
    double parsed = 0;
    REQUIRE(e.at(0).is_double());
    CHECK(e.at(0).get_double().get(parsed) == simdjson::SUCCESS);
    CHECK(std::bit_cast<std::uint64_t>(parsed) == std::bit_cast<std::uint64_t>(d));
  }
}

TEST_CASE("normalize_nonfinite rewrites Infinity, -Infinity and NaN outside strings only", "[detail][json]") {
  CHECK(normalize_nonfinite("[Infinity, -Infinity, NaN]") == "[null, null, null]");
  CHECK(normalize_nonfinite(R"({"t": [1.5, NaN], "u": -Infinity})") == R"({"t": [1.5, null], "u": null})");
  CHECK(normalize_nonfinite(R"({"NaN": "Infinity", "x": NaN})") == R"({"NaN": "Infinity", "x": null})");
  CHECK(normalize_nonfinite(R"(["say \"NaN\" -Infinity", Infinity])") == R"(["say \"NaN\" -Infinity", null])");
  CHECK(normalize_nonfinite(R"(["ends with backslash\\", NaN, "\\\"NaN"])") ==
        R"(["ends with backslash\\", null, "\\\"NaN"])");
  CHECK(normalize_nonfinite(R"({"a":1,"b":[true,false,null]})") == R"({"a":1,"b":[true,false,null]})");
  CHECK(normalize_nonfinite("") == "");

  simdjson::dom::parser parser;
  auto e = parse(parser, normalize_nonfinite(R"({"timings": [Infinity, 1.0, NaN], "s": "NaN"})"));
  double t = 0;
  REQUIRE(json_read_timing(e["timings"].at(0), t));
  CHECK(std::isinf(t));
  REQUIRE(json_read_timing(e["timings"].at(1), t));
  CHECK(t == 1.0);
  std::string_view s;
  REQUIRE(e["s"].get_string().get(s) == simdjson::SUCCESS);
  CHECK(s == "NaN");
}

TEST_CASE("json_read_timing reads numbers and null, and refuses other kinds", "[detail][json]") {
  simdjson::dom::parser parser;
  auto e = parse(parser, R"([null, 2, 2.5, 18446744073709551615, "3", true, [1]])");
  double t = 0;
  CHECK(json_read_timing(e.at(0), t));
  CHECK(t == std::numeric_limits<double>::infinity());
  CHECK(json_read_timing(e.at(1), t));
  CHECK(t == 2.0);
  CHECK(json_read_timing(e.at(2), t));
  CHECK(t == 2.5);
  CHECK(json_read_timing(e.at(3), t));
  CHECK(t == 18446744073709551615.0);
  CHECK_FALSE(json_read_timing(e.at(4), t));
  CHECK_FALSE(json_read_timing(e.at(5), t));
  CHECK_FALSE(json_read_timing(e.at(6), t));
}

namespace {

/// find_json_syntax_error's "line:column: what" for `text`, or "none".
std::string syntax(std::string_view text, bool nonfinite = false) {
  const auto e = find_json_syntax_error(text, nonfinite);
  if (!e) return "none";
  return std::to_string(e->line) + ":" + std::to_string(e->column) + ": " + e->what;
}

} // namespace

TEST_CASE("find_json_syntax_error says where a text stops being JSON, and what was expected there", "[detail][json]") {
  using Catch::Contains;
  using Catch::StartsWith;
  CHECK(syntax(R"({"a": [1, 2.5e-3, -0, "x\u00e9\n", true, false, null, {}, []]})") == "none");
  CHECK(syntax("  \n 7 \n") == "none");
  // A missing comma between members, on the line and column of what follows.
  CHECK_THAT(syntax("{\n  \"a\": 1\n  \"b\": 2\n}"),
             StartsWith("3:3: ") && Contains("expected ',' or '}' after an object member, found '\"'"));
  CHECK_THAT(syntax("[1 2]"), StartsWith("1:4: ") && Contains("expected ',' or ']' after an array element"));
  CHECK_THAT(syntax("{\"a\": 1,}"), StartsWith("1:9: ") && Contains("no trailing comma"));
  CHECK_THAT(syntax("[1, ]"), StartsWith("1:5: ") && Contains("no trailing comma"));
  CHECK_THAT(syntax("{\"a\" 1}"), StartsWith("1:6: ") && Contains("expected ':' after the member name, found '1'"));
  CHECK_THAT(syntax("{a: 1}"), StartsWith("1:2: ") && Contains("member name in double quotes, found 'a'"));
  CHECK_THAT(syntax("{\"a\": True}"), StartsWith("1:7: ") && Contains("found 'True'"));
  CHECK_THAT(syntax("{\"a\": 1} // c"), StartsWith("1:10: ") && Contains("JSON has no comments"));
  CHECK_THAT(syntax("[\"abc"), StartsWith("1:2: ") && Contains("never closed"));
  CHECK_THAT(syntax("[\"a\nb\"]"), StartsWith("1:4: ") && Contains("a line break inside a string"));
  CHECK_THAT(syntax("[\"a\\qb\"]"), StartsWith("1:4: ") && Contains("invalid escape"));
  CHECK_THAT(syntax("[\"\\u12g4\"]"), StartsWith("1:3: ") && Contains("four hexadecimal digits"));
  CHECK_THAT(syntax("[\"\xC3\"]"), StartsWith("1:3: ") && Contains("not UTF-8"));
  CHECK_THAT(syntax("[\"\xED\xA0\x80\"]"), StartsWith("1:3: ") && Contains("not UTF-8")); // a surrogate
  CHECK_THAT(syntax("[01]"), StartsWith("1:2: ") && Contains("leading zero"));
  CHECK_THAT(syntax("[1.]"), StartsWith("1:2: ") && Contains("'.' must be followed by digits"));
  CHECK_THAT(syntax("[-]"), StartsWith("1:2: ") && Contains("malformed number"));
  CHECK_THAT(syntax("[1e+]"), StartsWith("1:2: ") && Contains("exponent"));
  CHECK_THAT(syntax("{\"a\": 1}}"), StartsWith("1:9: ") && Contains("expected the end of the text"));
  CHECK_THAT(syntax(" \n "), StartsWith("2:2: ") && Contains("empty"));
  CHECK_THAT(syntax("{\"a\": "), StartsWith("1:7: ") && Contains("found the end of the text"));
  CHECK_THAT(syntax("[1, 2"), Contains("found the end of the text"));
  // Surrogates come in pairs (simdjson refuses a lone one).
  CHECK(syntax(R"(["\ud83d\ude00"])") == "none");
  CHECK_THAT(syntax(R"(["\ud800"])"), StartsWith("1:3: ") && Contains("high surrogate not followed by a low one"));
  CHECK_THAT(syntax(R"(["\ud800\u0041"])"), StartsWith("1:3: ") && Contains("high surrogate"));
  CHECK_THAT(syntax(R"(["\udc00"])"), StartsWith("1:3: ") && Contains("low surrogate with no high surrogate"));
  // What people write by mistake, named.
  CHECK_THAT(syntax("{'a': 1}"),
             StartsWith("1:2: ") && Contains("found a single quote (JSON strings take double quotes)"));
  CHECK_THAT(syntax("\xEF\xBB\xBF{}"), StartsWith("1:1: ") && Contains("a byte-order mark"));
  CHECK_THAT(syntax("[\"ab\\"), StartsWith("1:2: ") && Contains("never closed"));
  // Columns count characters, not bytes.
  CHECK_THAT(syntax("[\"caf\xC3\xA9\" 1]"), StartsWith("1:9: "));
  // Python's non-finite numbers: refused, unless the reader accepts them (databases, Triton's files).
  CHECK_THAT(syntax("[NaN]"), StartsWith("1:2: ") && Contains("found 'NaN'"));
  CHECK(syntax("[NaN, Infinity, -Infinity]", true) == "none");
  // Nesting: as deep as simdjson reads, not deeper; a hostile depth costs no stack.
  CHECK(syntax(std::string(1024, '[') + std::string(1024, ']')) == "none");
  // simdjson counts a scalar as a level: 1024 containers hold only empty ones.
  CHECK_THAT(syntax(std::string(1024, '[') + "1" + std::string(1024, ']')),
             StartsWith("1:1025: ") && Contains("1024 levels"));
  CHECK(syntax(std::string(1023, '[') + "1" + std::string(1023, ']')) == "none");
  CHECK_THAT(syntax(std::string(1025, '[') + std::string(1025, ']')),
             StartsWith("1:1025: ") && Contains("1024 levels"));
  CHECK_THAT(syntax(std::string(5'000'000, '[')), Contains("1024 levels"));
}

TEST_CASE("what cotune writes is JSON: bytes that are not UTF-8 are written as U+FFFD", "[detail][json]") {
  // A compiler's message echoing a Latin-1 source line ("Größe"), a truncated sequence, a surrogate.
  const std::string latin1 = "gr\xF6\xDF"
                             "e",
                    cut = "caf\xC3", surrogate = "\xED\xA0\x80";
  CHECK(json_quoted(latin1) == "\"gr\\ufffd\\ufffde\"");
  CHECK(json_quoted(cut) == "\"caf\\ufffd\"");
  CHECK(json_quoted(surrogate) == "\"\\ufffd\\ufffd\\ufffd\"");
  CHECK(json_quoted("\xF0\x9F\x98\x80") == "\"\xF0\x9F\x98\x80\""); // valid 4-byte UTF-8 passes through
  simdjson::dom::parser parser;
  for (const auto& s : {latin1, cut, surrogate}) {
    const auto e = parse(parser, "[" + json_quoted(s) + "]");
    CHECK(std::string(std::string_view(e.at(0))) == utf8_sanitized(s));
  }
  CHECK(utf8_sanitized(latin1) == "gr\xEF\xBF\xBD\xEF\xBF\xBD"
                                  "e");
  CHECK(utf8_sanitized("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(valid_utf8(utf8_sanitized(surrogate)));
}

TEST_CASE("find_json_syntax_error agrees with simdjson on 20,000 one-byte edits of a valid document",
          "[detail][json]") {
  // Every edit simdjson refuses has a place the scan names; every edit simdjson reads, the scan accepts.
  // The document's numbers are small, so no edit makes one simdjson refuses for its range alone.
  const std::string base = "{\n  \"name\": \"gemm\", \"values\": [1, -2, 3.5, 4e2, true, false, null],\n"
                           "  \"nested\": {\"k\": [\"a\\\"b\", \"\\u00e9\", \"\\ud83d\\ude00\", {}], \"z\": []}\n}\n";
  const std::string alphabet = "{}[],:\"\\ \n0123456789-+.eEtrufalsn/xq\x01\xC3'dcu";
  std::mt19937 rng(20261205);
  simdjson::dom::parser parser;
  int refused = 0;
  for (int n = 0; n < 20'000; ++n) {
    std::string t = base;
    const std::size_t at = rng() % t.size();
    const char c = alphabet[rng() % alphabet.size()];
    switch (rng() % 3) {
    case 0:
      t.erase(at, 1);
      break;
    case 1:
      t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c);
      break;
    default:
      t[at] = c;
    }
    simdjson::dom::element e;
    const bool reads = parser.parse(t).get(e) == simdjson::SUCCESS;
    const auto problem = find_json_syntax_error(t);
    INFO(t);
    CHECK(reads == !problem);
    refused += reads ? 0 : 1;
  }
  CHECK(refused > 5'000); // the edits do break the grammar, in many ways
}
