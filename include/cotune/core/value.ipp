#pragma once
/// \file The bodies of core/value.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include <cotune/core/errors.hpp>
#include <cotune/core/value.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

COTUNE_DECL value::value(double v) : v_(v == 0.0 ? 0.0 : v) {
  // -0.0 is stored as 0.0: the two compare equal, so they must also share one text (and hash).
  if (!std::isfinite(v))
    throw error("cotune::value: a floating parameter must be finite (got " + detail::double_text(v) +
                "); NaN would make configs compare unequal to themselves");
}

COTUNE_DECL value::value(std::string v) : v_(std::move(v)) {
  // Configs travel as JSON (cache entries, tuning results), and JSON strings are UTF-8: a string
  // with other bytes would be written but could never be read back.
  if (!detail::valid_utf8(std::get<std::string>(v_)))
    throw error("cotune::value: a string parameter must be valid UTF-8 (got " + text() + ")");
}

COTUNE_DECL std::string value::text() const {
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

COTUNE_DECL std::string value::macro_text() const {
  if (is_bool()) return as_bool() ? "1" : "0";
  if (is_string()) return as_string();
  return text();
}

} // namespace cotune

COTUNE_DECL fmt::format_context::iterator fmt::formatter<cotune::value>::format(const cotune::value& v,
                                                                                format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(v.text(), ctx);
}
