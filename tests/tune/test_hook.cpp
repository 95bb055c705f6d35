// Tests for cotune/tune/hook.hpp: a std::function that also takes callables naming only its leading
// arguments (generic lambdas, lambdas of the first few arguments).
#include <catch2/catch.hpp>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>

#include <cotune/core/config.hpp>
#include <cotune/tune/hook.hpp>

using cotune::config;
using cotune::hook;

namespace {

using verify_hook = hook<std::optional<std::string>(const config&, const int&, const double&)>;
using post_hook = hook<void(std::exception_ptr, int&, double&)>;

int plain(const config&, const int& a, const double&) { return a; }

} // namespace

// What converts, checked at compile time: every leading prefix, generic lambdas, and nothing else.
static_assert(std::is_convertible_v<decltype([](const config&, const int&, const double&) { return std::optional<std::string>(); }), verify_hook>);
static_assert(std::is_convertible_v<decltype([](const config&, const auto&...) { return std::optional<std::string>(); }), verify_hook>);
static_assert(std::is_convertible_v<decltype([](const config&) { return std::optional<std::string>(); }), verify_hook>);
static_assert(std::is_convertible_v<decltype([] { return std::optional<std::string>(); }), verify_hook>);
// Parameters that are not a prefix of the arguments, or a result that does not convert, do not fit.
static_assert(!std::is_convertible_v<decltype([](const int&) { return std::optional<std::string>(); }), verify_hook>);
static_assert(!std::is_convertible_v<decltype([](const config&) { return 1.5; }), verify_hook>);
static_assert(!std::is_convertible_v<decltype([](const config&, const int&, const double&, int) { return std::optional<std::string>(); }), verify_hook>);
static_assert(std::is_convertible_v<decltype(&plain), hook<int(const config&, const int&, const double&)>>);

TEST_CASE("a hook calls a callable with every argument or only the leading ones it names", "[tune][hook]") {
  const config c{{"X", 3}};
  int calls = 0;
  verify_hook all = [&](const config& k, const int& a, const double& b) -> std::optional<std::string> {
    ++calls;
    return fmt::format("{} {} {}", k.at("X").as_int(), a, b);
  };
  verify_hook generic = [&](const config& k, const auto&... rest) -> std::optional<std::string> {
    ++calls;
    return fmt::format("{} {}", k.at("X").as_int(), sizeof...(rest));
  };
  verify_hook first_two = [&](const config& k, const int& a) -> std::optional<std::string> {
    ++calls;
    return fmt::format("{}+{}", k.at("X").as_int(), a);
  };
  verify_hook none = [&]() -> std::optional<std::string> {
    ++calls;
    return std::nullopt;
  };
  CHECK(all(c, 4, 0.5) == "3 4 0.5");
  CHECK(generic(c, 4, 0.5) == "3 2"); // a generic lambda gets all of them
  CHECK(first_two(c, 4, 0.5) == "3+4");
  CHECK(none(c, 4, 0.5) == std::nullopt);
  CHECK(calls == 4);
}

TEST_CASE("a hook passes mutable arguments through to a callable that names them", "[tune][hook]") {
  post_hook h = [](std::exception_ptr e, int& a) { a = e ? -1 : a + 1; };
  int a = 1;
  double b = 0;
  h(nullptr, a, b);
  CHECK(a == 2);
  h(std::make_exception_ptr(std::exception()), a, b);
  CHECK(a == -1);
}

TEST_CASE("an empty hook tests false, as an empty std::function does", "[tune][hook]") {
  verify_hook unset;
  CHECK_FALSE(unset);
  verify_hook from_null = nullptr;
  CHECK_FALSE(from_null);
  // An empty std::function of the same signature, or a null function pointer, stays empty.
  verify_hook from_empty = std::function<std::optional<std::string>(const config&, const int&, const double&)>();
  CHECK_FALSE(from_empty);
  hook<int(const config&, const int&, const double&)> from_null_pointer = static_cast<decltype(&plain)>(nullptr);
  CHECK_FALSE(from_null_pointer);
  hook<int(const config&, const int&, const double&)> from_pointer = &plain;
  REQUIRE(from_pointer);
  CHECK(from_pointer(config{}, 7, 0.0) == 7);
  // Assigned later, as an options member is.
  unset = [](const config&) -> std::optional<std::string> { return "set"; };
  REQUIRE(unset);
  CHECK(unset(config{}, 0, 0.0) == "set");
  unset = nullptr;
  CHECK_FALSE(unset);
}
