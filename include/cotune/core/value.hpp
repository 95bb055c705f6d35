#pragma once
/// \file `cotune::value`: one configuration parameter (integer, floating, bool or string).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>

namespace cotune {

/// A configuration parameter's value. Integers and floating values are distinct (2 != 2.0), so
/// that a parameter's type survives a JSON round trip and a cache key tells them apart.
class value {
public:
  using storage = std::variant<std::int64_t, double, bool, std::string>;

  value() = default;
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  value(T v) : v_(static_cast<std::int64_t>(v)) { // NOLINT(google-explicit-constructor)
    // A uint64 above INT64_MAX would otherwise wrap to a negative parameter.
    if (!std::in_range<std::int64_t>(v))
      throw error("cotune::value: the integer " + std::to_string(v) + " does not fit in a 64-bit signed parameter");
  }
  COTUNE_DECL value(double v); // NOLINT(google-explicit-constructor)
  value(float v) : value(static_cast<double>(v)) {} // NOLINT(google-explicit-constructor)
  value(bool v) : v_(v) {} // NOLINT(google-explicit-constructor)
  COTUNE_DECL value(std::string v); // NOLINT(google-explicit-constructor)
  value(std::string_view v) : value(std::string(v)) {} // NOLINT(google-explicit-constructor)
  value(const char* v) : value(std::string(v)) {}      // NOLINT(google-explicit-constructor)

  template <class T>
  [[nodiscard]] bool is() const noexcept {
    return std::holds_alternative<T>(v_);
  }
  [[nodiscard]] bool is_int() const noexcept { return is<std::int64_t>(); }
  [[nodiscard]] bool is_double() const noexcept { return is<double>(); }
  [[nodiscard]] bool is_bool() const noexcept { return is<bool>(); }
  [[nodiscard]] bool is_string() const noexcept { return is<std::string>(); }

  /// The integer value; throws if the value is not an integer.
  [[nodiscard]] std::int64_t as_int() const { return get<std::int64_t>("an integer"); }
  /// The value as a double (integers convert); throws for bool and string.
  [[nodiscard]] double as_double() const {
    if (is_int()) return static_cast<double>(std::get<std::int64_t>(v_));
    return get<double>("a number");
  }
  [[nodiscard]] bool as_bool() const { return get<bool>("a bool"); }
  [[nodiscard]] const std::string& as_string() const { return get<std::string>("a string"); }
  [[nodiscard]] const storage& raw() const noexcept { return v_; }

  /// Canonical text: 64, 1.5, 2.0, true, "text" (strings quoted, so that "1" and 1 differ).
  [[nodiscard]] COTUNE_DECL std::string text() const;
  /// Text for a preprocessor definition or template argument: 64, 1.5, 1/0, strings verbatim.
  [[nodiscard]] COTUNE_DECL std::string macro_text() const;
  /// The value as JSON (the canonical text is valid JSON).
  [[nodiscard]] std::string json() const { return text(); }

  friend bool operator==(const value&, const value&) = default;

private:
  template <class T>
  const T& get(const char* what) const {
    if (auto p = std::get_if<T>(&v_)) return *p;
    throw error("cotune::value: " + text() + " is not " + what);
  }
  storage v_{std::int64_t{0}};
};

} // namespace cotune

template <>
struct fmt::formatter<cotune::value> : fmt::formatter<std::string_view> {
  // Out of line: the base's body is in <fmt/format.h>, which the headers leave out (value.ipp has it).
  COTUNE_DECL format_context::iterator format(const cotune::value& v, format_context& ctx) const;
};

#if COTUNE_HEADER_ONLY
#include <cotune/core/value.ipp>
#endif
