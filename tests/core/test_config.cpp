// Tests for cotune/core/config.hpp: a candidate configuration as a plain value.

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <typeinfo>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include <cotune/core/config.hpp>

using cotune::config;
using cotune::launch_options;
using cotune::value;

namespace {

constexpr bool identifier_rules() {
  using cotune::is_identifier;
  return is_identifier("BLOCK") && is_identifier("_x") && is_identifier("a1_b2") && is_identifier("Z") &&
         !is_identifier("") && !is_identifier("A-B") && !is_identifier("1X") && !is_identifier("X;rm") &&
         !is_identifier("X Y") && !is_identifier("-DX") && !is_identifier("X=1") && !is_identifier("é") &&
         !is_identifier("a.b");
}

constexpr bool thread_rules() {
  constexpr launch_options defaults{};
  launch_options eight{};
  eight.num_warps = 8;
  launch_options fixed{};
  fixed.num_warps = 8;
  fixed.threads_per_block = 96;
  return defaults.threads() == 128 && defaults.threads(64) == 256 && eight.threads() == 256 &&
         eight.threads(64) == 512 && fixed.threads() == 96 && fixed.threads(64) == 96 && defaults == launch_options{} &&
         !(defaults == eight);
}

} // namespace

TEST_CASE("is_identifier accepts C identifiers only", "[core][config]") {
  static_assert(identifier_rules());
  CHECK(identifier_rules());
}

TEST_CASE("threads per block derive from num_warps unless set", "[core][config]") {
  static_assert(thread_rules());
  CHECK(thread_rules());
  launch_options designated{.num_warps = 2, .num_stages = 4, .num_ctas = 1, .maxnreg = 128};
  CHECK(designated.threads() == 64);
}

TEST_CASE("equality and hash do not depend on the order parameters were given in", "[core][config]") {
  config a{{"BLOCK", 64}, {"MODE", "fast"}, {"SCALE", 1.5}, {"FLAG", true}};
  config b{{"FLAG", true}, {"SCALE", 1.5}, {"MODE", "fast"}, {"BLOCK", 64}};
  config c;
  c.set("SCALE", 1.5).set("BLOCK", 64).set("FLAG", true).set("MODE", "fast");
  CHECK(a == b);
  CHECK(a == c);
  CHECK(std::hash<config>{}(a) == std::hash<config>{}(b));
  CHECK(std::hash<config>{}(a) == std::hash<config>{}(c));
  CHECK(a.text() == b.text());
  CHECK(a.json() == b.json());
  std::unordered_set<config> set{a, b, c};
  CHECK(set.size() == 1);
}

TEST_CASE("configs that differ in any part are unequal", "[core][config]") {
  const config base{{"BLOCK", 64}};
  CHECK(base != config{{"BLOCK", 64.0}}); // 64 vs 64.0
  CHECK(base != config{{"BLOCK", "64"}});
  CHECK(base != config{{"BLOCK", 32}});
  CHECK(base != config{{"BLOCK", 64}, {"X", 1}});
  CHECK(base != config({{"BLOCK", 64}}, launch_options{.num_warps = 8}));
  launch_options nreg;
  nreg.maxnreg = 128;
  CHECK(base != config({{"BLOCK", 64}}, nreg));
  launch_options tpb;
  tpb.threads_per_block = 128; // equal to the derived count, but set explicitly
  CHECK(base != config({{"BLOCK", 64}}, tpb));
  auto hooked = config{{"BLOCK", 64}}.with_pre_hook("zero_c", [](const cotune::hook_args&) {});
  CHECK(base != hooked);
  CHECK(std::hash<config>{}(base) != std::hash<config>{}(hooked));
  // The hook's name, not its function, takes part in equality.
  int calls = 0;
  auto same_name = config{{"BLOCK", 64}}.with_pre_hook("zero_c", [&](const cotune::hook_args&) { ++calls; });
  CHECK(hooked == same_name);
  CHECK(std::hash<config>{}(hooked) == std::hash<config>{}(same_name));
  CHECK(hooked != config{{"BLOCK", 64}}.with_pre_hook("other", [](const cotune::hook_args&) {}));
}

TEST_CASE("the canonical text is exact", "[core][config]") {
  CHECK(config{}.text() == "num_warps: 4, num_stages: 3, num_ctas: 1");
  CHECK(config{{"BLOCK_SIZE", 128}}.text() == "BLOCK_SIZE: 128, num_warps: 4, num_stages: 3, num_ctas: 1");
  config c{{"MODE", "fast"}, {"BLOCK", 64}, {"SCALE", 2.0}, {"ON", false}};
  CHECK(c.text() == R"(BLOCK: 64, MODE: "fast", ON: false, SCALE: 2.0, num_warps: 4, num_stages: 3, num_ctas: 1)");
  launch_options launch{.num_warps = 8, .num_stages = 2, .num_ctas = 2, .maxnreg = 96, .threads_per_block = 512};
  auto full = config({{"B", 1}}, launch).with_pre_hook("zero", {});
  CHECK(full.text() ==
        "B: 1, num_warps: 8, num_stages: 2, num_ctas: 2, maxnreg: 96, threads_per_block: 512, pre_hook: zero");
  CHECK(fmt::format("{}", full) == full.text());
}

TEST_CASE("JSON round trips keep every part of a config", "[core][config]") {
  std::vector<config> configs;
  configs.push_back(config{});
  configs.push_back(config{{"I", 64}, {"NEG", -7}, {"BIG", std::numeric_limits<std::int64_t>::max()},
                           {"SMALL", std::numeric_limits<std::int64_t>::min()}});
  configs.push_back(config{{"D", 2.0}, {"F", 0.1}, {"E", 1e-300}, {"H", 1e300}, {"N", -1.25}});
  configs.push_back(config{{"T", true}, {"F", false}});
  configs.push_back(config{{"Q", "say \"hi\""}, {"B", "back\\slash"}, {"N", "line\nbreak\ttab\r"},
                           {"U", "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80"}, {"C", std::string("\x01\x1f", 2)},
                           {"E", ""}, {"S", "/"}});
  launch_options launch{.num_warps = 8, .num_stages = 5, .num_ctas = 2, .maxnreg = 128, .threads_per_block = 256};
  configs.push_back(config({{"BLOCK", 32}}, launch));
  launch_options only_nreg;
  only_nreg.maxnreg = 64;
  configs.push_back(config({{"X", 1}}, only_nreg));
  configs.push_back(config{{"X", 1}}.with_pre_hook("zero \"acc\"", [](const cotune::hook_args&) {}));
  for (const auto& c : configs) {
    INFO(c.json());
    const auto back = config::from_json(c.json());
    CHECK(back == c);
    CHECK(back.text() == c.text());
    CHECK(back.json() == c.json());
    CHECK(std::hash<config>{}(back) == std::hash<config>{}(c));
    for (const auto& [name, v] : c.params()) CHECK(back.at(name).raw().index() == v.raw().index());
  }
  // A read-back hook has its name but no function (functions are not serialised).
  const auto hooked = config::from_json(configs.back().json());
  REQUIRE(hooked.pre_hook());
  CHECK(hooked.pre_hook()->name == "zero \"acc\"");
  CHECK_FALSE(hooked.pre_hook()->fn);
}

TEST_CASE("from_json reads JSON escapes and applies defaults for missing launch options", "[core][config]") {
  auto c = config::from_json(R"({"params": {"S": "caf\u00e9 \ud83d\ude00", "N": 3}})");
  CHECK(c.at("S").as_string() == "caf\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(c.at("N").as_int() == 3);
  CHECK(c.launch() == launch_options{});
  CHECK_FALSE(c.pre_hook());
  auto d = config::from_json(R"({"params": {}, "num_warps": 2, "maxnreg": null, "threads_per_block": 64})");
  CHECK(d.launch().num_warps == 2);
  CHECK_FALSE(d.launch().maxnreg);
  CHECK(d.launch().threads_per_block == 64);
}

TEST_CASE("from_json refuses malformed input with a message saying what is wrong", "[core][config]") {
  CHECK_THROWS_WITH(config::from_json("{"),
                    Catch::Contains("not valid JSON at line 1, column 2: expected a member name"));
  CHECK_THROWS_WITH(config::from_json(""), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(config::from_json("[1, 2]"), Catch::Contains("expected an object"));
  CHECK_THROWS_WITH(config::from_json("{}"), Catch::Contains("params"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": [1]})"), Catch::Contains("params"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {"X": null}})"), Catch::Contains("'X'"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {"X": [1]}})"), Catch::Contains("unsupported type"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {"X": {"a": 1}}})"), Catch::Contains("unsupported type"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {"X": NaN}})"), Catch::Contains("'X'"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {"A-B": 1}})"), Catch::Contains("A-B"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "num_warps": 4.5})"), Catch::Contains("num_warps"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "num_stages": "3"})"), Catch::Contains("num_stages"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "maxnreg": true})"), Catch::Contains("maxnreg"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "num_warps": 4294967300})"), Catch::Contains("num_warps"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "num_ctas": -4294967295})"), Catch::Contains("num_ctas"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "pre_hook": 3})"), Catch::Contains("pre_hook"));
  CHECK_THROWS_WITH(config::from_json(R"({"params": {}, "pre_hook": ""})"), Catch::Contains("pre_hook"));
  CHECK_THROWS_AS(config::from_json(R"({"params": {"X": 1}} trailing)"), cotune::error);
}

TEST_CASE("parameter names must be C identifiers", "[core][config]") {
  for (const char* name : {"A-B", "1X", "X;rm", "", "X Y", "-DX", "X=1", "a.b"}) {
    INFO(name);
    config c;
    CHECK_THROWS_WITH(c.set(name, 1), Catch::Contains("not a C identifier"));
    CHECK(c.params().empty());
  }
  CHECK_THROWS_AS((config{{"X;rm -rf", 1}}), cotune::error);
}

TEST_CASE("a parameter given twice is refused, and set replaces", "[core][config]") {
  CHECK_THROWS_WITH((config{{"X", 1}, {"X", 2}}), Catch::Contains("'X' is given twice"));
  config c{{"X", 1}};
  c.set("X", 2.5);
  CHECK(c.at("X") == value(2.5));
  CHECK(c.params().size() == 1);
}

TEST_CASE("non-finite floating parameters are refused", "[core][config]") {
  config c;
  CHECK_THROWS_WITH(c.set("X", std::numeric_limits<double>::quiet_NaN()), Catch::Contains("finite"));
  CHECK_THROWS_AS(c.set("X", std::numeric_limits<double>::infinity()), cotune::error);
}

TEST_CASE("lookups find parameters and a missing one names the config", "[core][config]") {
  const config c{{"B", 2}, {"A", 1}};
  CHECK(c.contains("A"));
  CHECK_FALSE(c.contains("C"));
  CHECK(c.find("C") == nullptr);
  REQUIRE(c.find("B") != nullptr);
  CHECK(*c.find("B") == value(2));
  CHECK(c.params().front().first == "A"); // sorted by name
  CHECK_THROWS_WITH(c.at("C"), Catch::Contains("no parameter 'C'") && Catch::Contains("A: 1, B: 2"));
}

TEST_CASE("a pre-hook needs a name", "[core][config]") {
  config c;
  CHECK_THROWS_WITH(c.with_pre_hook("", {}), Catch::Contains("non-empty name"));
}

TEST_CASE("hook_args::arg checks the argument's type", "[core][config]") {
  int n = 5;
  float x = 1.5f;
  std::vector<void*> ptrs{&n, &x};
  std::vector<const std::type_info*> types{&typeid(int), &typeid(float)};
  std::vector<std::string> names{"n", "x"};
  const config c{{"B", 1}};
  const cotune::hook_args args{c, ptrs, types, names};
  CHECK(&args.arg<int>(0) == &n);
  CHECK(args.arg<float>("x") == 1.5f);
  args.arg<int>("n") = 6;
  CHECK(n == 6);
  CHECK_THROWS_WITH(args.arg<float>(0), Catch::Contains("argument 0 ('n')") && Catch::Contains("type"));
  CHECK_THROWS_WITH(args.arg<double>("x"), Catch::Contains("'x'"));
  CHECK_THROWS_WITH(args.arg<int>(2), Catch::Contains("no argument 2") && Catch::Contains("has 2"));
  CHECK_THROWS_WITH(args.arg<int>("y"), Catch::Contains("no argument named 'y'"));
  CHECK(&args.cfg == &c);
}

TEST_CASE("a config's pre-hook is called with the arguments", "[core][config]") {
  int seen = 0;
  auto c = config{{"B", 1}}.with_pre_hook("record", [&](const cotune::hook_args& a) { seen = a.arg<int>(0); });
  int n = 42;
  std::vector<void*> ptrs{&n};
  std::vector<const std::type_info*> types{&typeid(int)};
  std::vector<std::string> names{"n"};
  REQUIRE(c.pre_hook());
  c.pre_hook()->fn(cotune::hook_args{c, ptrs, types, names});
  CHECK(seen == 42);
}

TEST_CASE("a 3-D block decides the thread count and shows in text and JSON", "[core][config][block]") {
  constexpr cotune::launch_options with_block{.num_warps = 8, .block = cotune::block_dims{16, 8, 2}};
  static_assert(with_block.threads() == 256 && with_block.block_shape() == cotune::block_dims{16, 8, 2});
  constexpr cotune::launch_options plain{.num_warps = 8};
  static_assert(plain.block_shape() == cotune::block_dims{256, 1, 1});
  CHECK(with_block.threads() == 256);
  CHECK(plain.block_shape(64) == cotune::block_dims{512, 1, 1});

  const cotune::config c({{"B", 1}}, with_block);
  CHECK(c.text() == "B: 1, num_warps: 8, num_stages: 3, num_ctas: 1, block: 16x8x2");
  CHECK(c.json().find("\"block\": [16, 8, 2]") != std::string::npos);
  const auto back = cotune::config::from_json(c.json());
  CHECK(back == c);
  CHECK(back.launch().block == cotune::block_dims{16, 8, 2});
  // A config without a block keeps the text and JSON it always had (and so its cache keys).
  const cotune::config old({{"B", 1}});
  CHECK(old.json().find("\"block\"") == std::string::npos);
  CHECK(cotune::config::from_json(old.json()) == old);
  CHECK(old != c);
  CHECK_THROWS_WITH(cotune::config::from_json(R"({"params": {}, "block": [1, 2]})"),
                    Catch::Contains("'block' must be an array of three integers"));
}
