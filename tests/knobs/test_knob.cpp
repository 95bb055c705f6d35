// Tests for cotune/knobs/knob.hpp: parsing, read-at-use, in-code values, scopes, snapshots, registry.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cotune/knobs/knob.hpp>

#include "../support/temp_dir.hpp"

using cotune::knob;
using cotune::knob_error;
using cotune::knob_registry;
using cotune_test::getenv_opt;
using cotune_test::scoped_env;

namespace {

// Knobs private to this test program, bound to variables nothing else reads.
constexpr const char* bool_env = "COTUNE_TEST_KNOB_BOOL";
constexpr const char* int_env = "COTUNE_TEST_KNOB_INT";
constexpr const char* double_env = "COTUNE_TEST_KNOB_DOUBLE";
constexpr const char* string_env = "COTUNE_TEST_KNOB_STRING";
constexpr const char* opt_env = "COTUNE_TEST_KNOB_OPT";

knob<bool>& test_bool() {
  static knob<bool> k{{.name = "test.flag", .env = bool_env, .fallback = true, .doc = "a test flag"}};
  return k;
}
knob<std::int64_t>& test_int() {
  static knob<std::int64_t> k{{.name = "test.count", .env = int_env, .fallback = 7, .doc = "a test count",
                               .validate = [](const std::int64_t& v) {
                                 if (v > 1000) throw knob_error("COTUNE_TEST_KNOB_INT is at most 1000");
                               }}};
  return k;
}
knob<double>& test_double() {
  static knob<double> k{{.name = "test.ratio", .env = double_env, .fallback = 0.5, .doc = "a test ratio"}};
  return k;
}
knob<std::string>& test_string() {
  static knob<std::string> k{{.name = "test.text", .env = string_env, .fallback = "fallback", .doc = "a test text",
                              .invalidating = true}};
  return k;
}
knob<std::optional<std::string>>& test_opt() {
  static knob<std::optional<std::string>> k{{.name = "test.maybe", .env = opt_env, .doc = "a test optional"}};
  return k;
}

cotune::knob_spec<int> knob_spec_for_late() {
  return {.name = "test.late", .env = "COTUNE_TEST_KNOB_LATE", .fallback = 1};
}

bool registered(const cotune::knob_base* k) {
  auto all = knob_registry::instance().all();
  return std::find(all.begin(), all.end(), k) != all.end();
}

} // namespace

TEST_CASE("a bool knob accepts 1/true/on/yes and 0/false/off/no in any case", "[knobs][knob]") {
  auto& k = test_bool();
  scoped_env env(bool_env, std::nullopt);
  for (const char* text : {"1", "true", "TRUE", "True", "tRuE", "on", "ON", "On", "yes", "YES", "Yes", "yEs"}) {
    INFO(text);
    env.set(std::string(text));
    CHECK(k.get() == true);
  }
  for (const char* text : {"0", "false", "FALSE", "False", "off", "OFF", "oFF", "Off", "no", "NO", "No", "nO"}) {
    INFO(text);
    env.set(std::string(text));
    CHECK(k.get() == false);
  }
}

TEST_CASE("a bool knob refuses any other text with an error naming the variable and the accepted values",
          "[knobs][knob]") {
  auto& k = test_bool();
  scoped_env env(bool_env, std::nullopt);
  for (const char* text : {"2", "enabled", "disabled", " true", "true ", "y", "n", "-1", "10", "truee", "t", "1.0"}) {
    INFO(text);
    env.set(std::string(text));
    try {
      (void)k.get();
      FAIL("no knob_error for " << text);
    } catch (const knob_error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(bool_env));
      CHECK_THAT(what, Catch::Contains(text));
      CHECK_THAT(what, Catch::Contains("1/true/on/yes"));
      CHECK_THAT(what, Catch::Contains("0/false/off/no"));
    }
  }
}

TEST_CASE("an empty or unset variable gives the default", "[knobs][knob]") {
  scoped_env b(bool_env, std::string(""));
  scoped_env i(int_env, std::string(""));
  scoped_env d(double_env, std::nullopt);
  scoped_env s(string_env, std::string(""));
  scoped_env o(opt_env, std::nullopt);
  CHECK(test_bool().get() == true);
  CHECK_FALSE(test_bool().is_set());
  CHECK(test_int().get() == 7);
  CHECK(test_double().get() == 0.5);
  CHECK(test_string().get() == "fallback");
  CHECK_FALSE(test_string().is_set());
  CHECK(test_opt().get() == std::nullopt);
  CHECK_FALSE(test_opt().is_set());
}

TEST_CASE("an int knob parses decimal integers and refuses anything else", "[knobs][knob]") {
  auto& k = test_int();
  scoped_env env(int_env, std::nullopt);
  env.set(std::string("4"));
  CHECK(k.get() == 4);
  env.set(std::string("-3"));
  CHECK(k.get() == -3);
  env.set(std::string("1000"));
  CHECK(k.get() == 1000);
  for (const char* text : {"4x", "x", "4.0", " 4", "4 ", "0x10", "1e3", "--1", "99999999999999999999999"}) {
    INFO(text);
    env.set(std::string(text));
    try {
      (void)k.get();
      FAIL("no knob_error for " << text);
    } catch (const knob_error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(int_env));
      CHECK_THAT(what, Catch::Contains(text));
      CHECK_THAT(what, Catch::Contains("integer"));
    }
  }
}

TEST_CASE("a validator refuses out-of-range values from the environment and from code", "[knobs][knob]") {
  auto& k = test_int();
  scoped_env env(int_env, std::string("1001"));
  CHECK_THROWS_AS(k.get(), knob_error);
  CHECK_THROWS_AS(k.set(5000), knob_error);
  CHECK(k.is_set()); // the environment still holds a (bad) value
  {
    auto outer = k.scoped(10);
    CHECK_THROWS_AS(k.scoped(2000), knob_error);
    CHECK(k.get() == 10); // the refused scope left the outer value in place
  }
  CHECK_THROWS_AS(k.get(), knob_error);
}

TEST_CASE("a double knob parses decimal numbers and refuses text and non-finite values", "[knobs][knob]") {
  auto& k = test_double();
  scoped_env env(double_env, std::nullopt);
  env.set(std::string("1.5"));
  CHECK(k.get() == 1.5);
  env.set(std::string("2"));
  CHECK(k.get() == 2.0);
  env.set(std::string("1e3"));
  CHECK(k.get() == 1000.0);
  env.set(std::string("-0.25"));
  CHECK(k.get() == -0.25);
  for (const char* text : {"abc", "1.5ms", "1,5", " 1", "nan", "inf", "-inf", "infinity", "1e999"}) {
    INFO(text);
    env.set(std::string(text));
    try {
      (void)k.get();
      FAIL("no knob_error for " << text);
    } catch (const knob_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(double_env));
    }
  }
}

TEST_CASE("string knobs read text verbatim, and an optional string is unset until set", "[knobs][knob]") {
  scoped_env s(string_env, std::string("  spaced out  "));
  scoped_env o(opt_env, std::nullopt);
  CHECK(test_string().get() == "  spaced out  ");
  CHECK(test_opt().get() == std::nullopt);
  o.set(std::string("/usr/bin/g++"));
  CHECK(test_opt().get() == std::optional<std::string>("/usr/bin/g++"));
  CHECK(test_opt().is_set());
  {
    // An in-code nullopt hides the environment.
    auto scope = test_opt().scoped(std::nullopt);
    CHECK(test_opt().get() == std::nullopt);
  }
  CHECK(test_opt().get() == std::optional<std::string>("/usr/bin/g++"));
}

TEST_CASE("the environment is read at each use", "[knobs][knob]") {
  auto& k = test_int();
  scoped_env env(int_env, std::string("1"));
  CHECK(k.get() == 1);
  env.set(std::string("2"));
  CHECK(k.get() == 2);
  CHECK(k() == 2);
  env.set(std::nullopt);
  CHECK(k.get() == 7);
}

TEST_CASE("an in-code value overrides the environment and reset falls back to it", "[knobs][knob]") {
  auto& k = test_int();
  scoped_env env(int_env, std::string("3"));
  k.set(42);
  CHECK(k.get() == 42);
  env.set(std::string("4")); // ignored while set in code
  CHECK(k.get() == 42);
  CHECK(k.is_set());
  k.reset();
  CHECK(k.get() == 4);
  env.set(std::nullopt);
  CHECK(k.get() == 7);
  CHECK_FALSE(k.is_set());
}

TEST_CASE("setting a knob never changes the process environment", "[knobs][knob]") {
  scoped_env b(bool_env, std::nullopt);
  scoped_env i(int_env, std::string("5"));
  scoped_env s(string_env, std::string("from env"));
  test_bool().set(false);
  test_int().set(9);
  {
    auto scope = test_string().scoped("from code");
    CHECK(test_string().get() == "from code");
    CHECK(getenv_opt(string_env) == std::optional<std::string>("from env"));
  }
  CHECK(getenv_opt(bool_env) == std::nullopt);
  CHECK(getenv_opt(int_env) == std::optional<std::string>("5"));
  test_bool().reset();
  test_int().reset();
  CHECK(getenv_opt(bool_env) == std::nullopt);
  CHECK(getenv_opt(int_env) == std::optional<std::string>("5"));
  CHECK(getenv_opt(string_env) == std::optional<std::string>("from env"));
}

TEST_CASE("scoped overrides nest and restore the previous state, including an earlier in-code value",
          "[knobs][knob]") {
  auto& k = test_int();
  scoped_env env(int_env, std::string("11"));
  {
    auto a = k.scoped(1);
    CHECK(k.get() == 1);
    {
      auto b = k.scoped(2);
      CHECK(k.get() == 2);
    }
    CHECK(k.get() == 1);
  }
  CHECK(k.get() == 11);
  CHECK(k.is_set()); // through the environment

  k.set(100);
  {
    auto a = k.scoped(200);
    CHECK(k.get() == 200);
  }
  CHECK(k.get() == 100); // the earlier in-code value, not the environment
  k.reset();
  CHECK(k.get() == 11);
}

TEST_CASE("a scope restores the previous state when left by an exception", "[knobs][knob]") {
  auto& k = test_string();
  scoped_env env(string_env, std::nullopt);
  try {
    auto scope = k.scoped("inside");
    throw std::runtime_error("leave");
  } catch (const std::runtime_error&) {
  }
  CHECK(k.get() == "fallback");
  CHECK_FALSE(k.is_set());
}

TEST_CASE("a knob snapshot restores every in-code value", "[knobs][knob]") {
  scoped_env i(int_env, std::nullopt);
  scoped_env s(string_env, std::nullopt);
  test_int().set(3);
  {
    cotune::knob_snapshot snapshot;
    test_int().set(30);
    test_string().set("changed");
    test_bool().set(false);
    CHECK(test_int().get() == 30);
  }
  CHECK(test_int().get() == 3);
  CHECK(test_string().get() == "fallback");
  CHECK_FALSE(test_string().is_set());
  CHECK(test_bool().is_set() == false);
  test_int().reset();
}

TEST_CASE("a knob describes itself", "[knobs][knob]") {
  CHECK(test_bool().name() == "test.flag");
  CHECK(test_bool().env() == bool_env);
  CHECK(test_bool().doc() == "a test flag");
  CHECK(test_bool().type_name() == "bool");
  CHECK(test_bool().default_text() == "true");
  CHECK(test_int().type_name() == "int");
  CHECK(test_int().default_text() == "7");
  CHECK(test_double().type_name() == "float");
  CHECK(test_double().default_text() == "0.5");
  CHECK(test_string().type_name() == "string");
  CHECK(test_string().default_text() == "fallback");
  CHECK(test_string().invalidates_caches());
  CHECK_FALSE(test_int().invalidates_caches());
  CHECK(test_opt().type_name() == "optional string");
  CHECK(test_opt().default_text() == "(unset)");

  scoped_env b(bool_env, std::string("ON"));
  CHECK(test_bool().current_text() == "true");
  scoped_env d(double_env, std::string("2"));
  CHECK(test_double().current_text() == "2.0");
}

TEST_CASE("a computed default is computed at each read", "[knobs][knob]") {
  int calls = 0;
  knob<std::string> k{{.name = "test.computed", .env = "COTUNE_TEST_KNOB_COMPUTED",
                       .computed_default = [&] { return "call " + std::to_string(++calls); },
                       .default_text = "a counter"}};
  scoped_env env("COTUNE_TEST_KNOB_COMPUTED", std::nullopt);
  CHECK(k.default_text() == "a counter");
  CHECK(k.get() == "call 1");
  CHECK(k.get() == "call 2");
  env.set(std::string("env"));
  CHECK(k.get() == "env");
  CHECK(calls == 2);
}

TEST_CASE("the registry holds live knobs only", "[knobs][knob]") {
  CHECK(registered(&test_bool()));
  const cotune::knob_base* address = nullptr;
  {
    knob<int> local{{.name = "test.local", .env = "COTUNE_TEST_KNOB_LOCAL", .invalidating = true}};
    address = &local;
    CHECK(registered(address));
  }
  CHECK_FALSE(registered(address));
  // Walking the registry after a knob died must not touch it.
  (void)knob_registry::instance().invalidating_text();
  cotune::knob_snapshot snapshot;
}

TEST_CASE("invalidating_text lists only set cache-invalidating knobs, sorted, with normalised values",
          "[knobs][knob]") {
  scoped_env s(string_env, std::nullopt);
  scoped_env i(int_env, std::string("12"));
  knob<bool> flag{{.name = "test.aflag", .env = "COTUNE_TEST_KNOB_AFLAG", .fallback = false, .invalidating = true}};
  scoped_env a("COTUNE_TEST_KNOB_AFLAG", std::nullopt);

  const std::string base = knob_registry::instance().invalidating_text();
  CHECK_THAT(base, !Catch::Contains(string_env));
  CHECK_THAT(base, !Catch::Contains("COTUNE_TEST_KNOB_AFLAG"));
  CHECK_THAT(base, !Catch::Contains(int_env)); // set, but not invalidating

  a.set(std::string("ON"));
  auto scope = test_string().scoped("v");
  const std::string text = knob_registry::instance().invalidating_text();
  CHECK_THAT(text, Catch::Contains("COTUNE_TEST_KNOB_AFLAG=true;"));
  CHECK_THAT(text, Catch::Contains(std::string(string_env) + "=v;"));
  CHECK(text.find("COTUNE_TEST_KNOB_AFLAG=") < text.find(std::string(string_env) + "="));
  CHECK_THAT(text, !Catch::Contains(int_env));

  // "1" and "on" give the same key text.
  a.set(std::string("1"));
  CHECK(knob_registry::instance().invalidating_text() == text);
}

TEST_CASE("a knob snapshot resets knobs created after it and skips knobs destroyed since", "[knobs][knob]") {
  scoped_env env("COTUNE_TEST_KNOB_LATE", std::nullopt);
  std::unique_ptr<knob<int>> late;
  {
    cotune::knob_snapshot snapshot;
    late = std::make_unique<knob<int>>(knob_spec_for_late()); // created after the snapshot
    late->set(9);
  }
  CHECK_FALSE(late->is_set());
  CHECK(late->get() == 1);
  {
    cotune::knob_snapshot snapshot;
    late.reset(); // destroyed while the snapshot lives: its destructor must not touch it
  }
  CHECK_FALSE(registered(nullptr));
}

TEST_CASE("a knob declared secret says so, and others do not", "[knobs][knob]") {
  cotune::knob<std::optional<std::string>> token{
      {.name = "test.token", .env = "COTUNE_TEST_TOKEN_SECRET_FLAG", .doc = "a test secret", .secret = true}};
  cotune::knob<int> plain{{.name = "test.plain", .env = "COTUNE_TEST_PLAIN_FLAG", .fallback = 1}};
  CHECK(token.is_secret());
  CHECK_FALSE(plain.is_secret());
}
