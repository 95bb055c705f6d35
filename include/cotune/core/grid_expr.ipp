#pragma once
/// \file The bodies of core/grid_expr.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/core/grid_expr.hpp>

namespace cotune::detail {

COTUNE_DECL std::int64_t checked_div(std::int64_t a, std::int64_t b, const config& c, const char* op) {
  if (b == 0)
    throw error(
        fmt::format(COTUNE_FMT("grid expression: {} by zero under config {{{}}}; give the parameter a non-zero value"),
                    op, c.text()));
  return a / b;
}

} // namespace cotune::detail
namespace cotune {

COTUNE_DECL std::int64_t param_ref::operator()(const config& c) const {
  const value& v = c.at(name);
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  throw error(
      fmt::format(COTUNE_FMT("config {{{}}}: parameter '{}' is {}, but a grid or derived value needs an integer"),
                  c.text(), name, v.text()));
}

} // namespace cotune
namespace cotune::detail {

COTUNE_DECL std::int64_t cdiv_op::operator()(std::int64_t a, std::int64_t b, const config& c) const {
  if (b <= 0)
    throw error(fmt::format(
        COTUNE_FMT("grid expression: cdiv({}, {}) under config {{{}}}: the divisor must be positive"), a, b, c.text()));
  return a <= 0 ? 0 : (a + b - 1) / b;
}

} // namespace cotune::detail
