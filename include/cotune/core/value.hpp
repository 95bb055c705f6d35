#pragma once
/// \file `cotune::value`: one configuration parameter (integer, floating, bool or string).

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/json.hpp>

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
  value(double v) : v_(v == 0.0 ? 0.0 : v) { // NOLINT(google-explicit-constructor)
    // -0.0 is stored as 0.0: the two compare equal, so they must also share one text (and hash).
    if (!std::isfinite(v))
      throw error("cotune::value: a floating parameter must be finite (got " + detail::double_text(v) +
                  "); NaN would make configs compare unequal to themselves");
  }
  value(float v) : value(static_cast<double>(v)) {} // NOLINT(google-explicit-constructor)
  value(bool v) : v_(v) {} // NOLINT(google-explicit-constructor)
  value(std::string v) : v_(std::move(v)) { // NOLINT(google-explicit-constructor)
    // Configs travel as JSON (cache entries, tuning results), and JSON strings are UTF-8: a string
    // with other bytes would be written but could never be read back.
    if (!detail::valid_utf8(std::get<std::string>(v_)))
      throw error("cotune::value: a string parameter must be valid UTF-8 (got " + text() + ")");
  }
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
  [[nodiscard]] std::string text() const {
    return std::visit(
        [](const auto& v) -> std::string {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::same_as<T, std::int64_t>) return std::to_string(v);
          else if constexpr (std::same_as<T, double>) return detail::double_text(v);
          else if constexpr (std::same_as<T, bool>) return v ? "true" : "false";
          else return detail::json_quoted(v);
        },
        v_);
  }
  /// Text for a preprocessor definition or template argument: 64, 1.5, 1/0, strings verbatim.
  [[nodiscard]] std::string macro_text() const {
    if (is_bool()) return as_bool() ? "1" : "0";
    if (is_string()) return as_string();
    return text();
  }
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
  auto format(const cotune::value& v, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(v.text(), ctx);
  }
};
