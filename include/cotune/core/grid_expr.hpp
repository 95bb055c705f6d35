#pragma once
/// \file Integer expressions over a config's parameters, for grids and derived launch options:
/// `cdiv(n, expr::p("BLOCK_X") * expr::p("TILE_X"))` (or, with `using namespace cotune::expr::literals;`,
/// `cdiv(n, "BLOCK_X"_p * "TILE_X"_p)`) is evaluated against a config as `e(cfg)`.
///
/// An expression is a small value built at compile time from `expr::p("NAME")` (a parameter), integers,
/// `+ - * / %`, `cdiv`, `min_of` and `max_of`; evaluating it allocates nothing and looks each parameter
/// up once (a binary search over the config's sorted names), so it may sit on the tuned call's path.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

namespace detail {

/// Marks expression types (found by `grid_expression`).
struct expr_tag {};

[[nodiscard]] COTUNE_DECL std::int64_t checked_div(std::int64_t a, std::int64_t b, const config& c, const char* op);

} // namespace detail

/// A type built by `p()`, integers and the operators below.
template <class E>
concept grid_expression = std::derived_from<std::remove_cvref_t<E>, detail::expr_tag>;

/// The integer value of a config's parameter, as an expression. The name is kept as a view: pass a
/// literal (or a string that outlives the expression).
struct param_ref : detail::expr_tag {
  std::string_view name;

  [[nodiscard]] std::int64_t operator()(const config& c) const;
};

/// An integer constant (a size taken from the call's arguments, a literal).
struct constant_expr : detail::expr_tag {
  std::int64_t v = 0;
  [[nodiscard]] constexpr std::int64_t operator()(const config&) const noexcept { return v; }
};

namespace expr {

/// `expr::p("BLOCK")`: the config's integer parameter BLOCK. Reach it as `cotune::expr::p`, by
/// `using namespace cotune::expr;` in a function, or as the literal `"BLOCK"_p` (expr::literals).
[[nodiscard]] constexpr param_ref p(std::string_view name) noexcept {
  param_ref r;
  r.name = name;
  return r;
}

namespace literals {

/// `"BLOCK"_p`: the same as `expr::p("BLOCK")`; `using namespace cotune::expr::literals;` takes no
/// common name from the user's scope.
[[nodiscard]] constexpr param_ref operator""_p(const char* name, std::size_t size) noexcept {
  return p(std::string_view(name, size));
}

} // namespace literals

using namespace literals;

} // namespace expr

/// The older spelling of `expr::p`, kept so that existing code compiles; prefer `cotune::expr::p` or
/// the `_p` literal in new code (a `using cotune::p;` takes the name `p` from the user's scope).
using expr::p;

namespace detail {

template <class T>
[[nodiscard]] constexpr auto as_expr(const T& t) {
  if constexpr (grid_expression<T>) return t;
  else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "a grid expression combines p(\"NAME\") and integers");
    constant_expr e;
    e.v = static_cast<std::int64_t>(t);
    return e;
  }
}

template <class T>
concept expr_operand = grid_expression<T> || std::is_integral_v<T>;

template <class L, class R>
concept expr_operands = expr_operand<L> && expr_operand<R> && (grid_expression<L> || grid_expression<R>);

template <class Op, class L, class R>
struct binary_expr : expr_tag {
  L l;
  R r;
  binary_expr(L a, R b) : l(a), r(b) {}
  [[nodiscard]] std::int64_t operator()(const config& c) const { return Op{}(l(c), r(c), c); }
};

template <class Op, class L, class R>
[[nodiscard]] auto make_binary(const L& l, const R& r) {
  using LE = decltype(as_expr(l));
  using RE = decltype(as_expr(r));
  return binary_expr<Op, LE, RE>(as_expr(l), as_expr(r));
}

struct add_op { std::int64_t operator()(std::int64_t a, std::int64_t b, const config&) const { return a + b; } };
struct sub_op { std::int64_t operator()(std::int64_t a, std::int64_t b, const config&) const { return a - b; } };
struct mul_op { std::int64_t operator()(std::int64_t a, std::int64_t b, const config&) const { return a * b; } };
struct div_op {
  std::int64_t operator()(std::int64_t a, std::int64_t b, const config& c) const { return checked_div(a, b, c, "division"); }
};
struct mod_op {
  std::int64_t operator()(std::int64_t a, std::int64_t b, const config& c) const {
    (void)checked_div(a, b, c, "remainder");
    return a % b;
  }
};
struct cdiv_op {
  std::int64_t operator()(std::int64_t a, std::int64_t b, const config& c) const;
};
struct min_op { std::int64_t operator()(std::int64_t a, std::int64_t b, const config&) const { return a < b ? a : b; } };
struct max_op { std::int64_t operator()(std::int64_t a, std::int64_t b, const config&) const { return a < b ? b : a; } };

} // namespace detail

template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto operator+(const L& l, const R& r) { return detail::make_binary<detail::add_op>(l, r); }
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto operator-(const L& l, const R& r) { return detail::make_binary<detail::sub_op>(l, r); }
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto operator*(const L& l, const R& r) { return detail::make_binary<detail::mul_op>(l, r); }
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto operator/(const L& l, const R& r) { return detail::make_binary<detail::div_op>(l, r); }
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto operator%(const L& l, const R& r) { return detail::make_binary<detail::mod_op>(l, r); }

/// ceil(a / b) (0 for a <= 0), as an expression: `cdiv(n, p("BLOCK_X") * p("TILE_X"))`.
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto cdiv(const L& a, const R& b) { return detail::make_binary<detail::cdiv_op>(a, b); }
/// ceil(a / b) (0 for a <= 0) of two integers, at compile time too: `cdiv(n, 256)`. The one `cdiv`:
/// with an expression on either side it is the expression above. Throws cotune::error for b <= 0.
template <std::integral L, std::integral R>
[[nodiscard]] constexpr std::int64_t cdiv(L a, R b) {
  const auto n = static_cast<std::int64_t>(a), d = static_cast<std::int64_t>(b);
  if (d <= 0) throw error(fmt::format("cdiv({}, {}): the divisor must be positive", n, d));
  return n <= 0 ? 0 : (n + d - 1) / d;
}
/// The smaller of two expressions.
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto min_of(const L& a, const R& b) { return detail::make_binary<detail::min_op>(a, b); }
/// The larger of two expressions.
template <class L, class R> requires detail::expr_operands<L, R>
[[nodiscard]] auto max_of(const L& a, const R& b) { return detail::make_binary<detail::max_op>(a, b); }

/// The value of `e` (an expression or an integer) under config `c`.
template <class E> requires detail::expr_operand<E>
[[nodiscard]] std::int64_t eval(const E& e, const config& c) {
  return detail::as_expr(e)(c);
}

namespace expr {
// The rest of the expression vocabulary, so that `using namespace cotune::expr;` brings all of it.
using cotune::cdiv;
using cotune::eval;
using cotune::max_of;
using cotune::min_of;
} // namespace expr

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/core/grid_expr.ipp>
#endif
