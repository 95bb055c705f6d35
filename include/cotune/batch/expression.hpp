#pragma once
/// \file `cotune::batch::expression`: the integer expressions of a job file (argument extents, scalar
/// values, config constraints, derived launch options), e.g. `M * K`, `BLOCK_M * BLOCK_K <= 4096 && n % 4 == 0`.
///
/// Integers only (64-bit, overflow and division by zero are errors), names looked up at evaluation,
/// C's operators and precedence: `|| && == != < <= > >= + - * / % ! -` and parentheses; a comparison
/// is 1 or 0; and the functions `cdiv(a, b)` (ceil(a / b), 0 for a <= 0, as a grid's block count),
/// `min(a, b)` and `max(a, b)`. Parsed once (errors give the column), evaluated per config or instance.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/core/errors.hpp>

namespace cotune::batch {

/// An expression that does not parse or evaluate: what is wrong and where (0-based column).
class expression_error : public error {
public:
  expression_error(const std::string& what, std::size_t column) : error(what), column_(column) {}
  [[nodiscard]] std::size_t column() const noexcept { return column_; }

private:
  std::size_t column_;
};

/// A parsed integer expression.
///
///     auto e = cotune::batch::expression::parse("BLOCK * 2 <= n");
///     bool ok = e.evaluate([&](std::string_view name) -> std::optional<std::int64_t> { ... }) != 0;
class expression {
public:
  /// Names to values; nothing for an unknown name (an error naming it).
  using lookup = std::function<std::optional<std::int64_t>(std::string_view)>;

  /// The longest expression `parse` takes, in characters, and the deepest nesting of parentheses,
  /// function calls and unary operators: a job file's expressions are short, and a hostile one must
  /// get a refusal, not a stack overflow in the recursive parser.
  static constexpr std::size_t max_length = 16384, max_depth = 200;

  /// Parses `text`; throws expression_error naming the column of what does not parse, or the limit
  /// it exceeds.
  [[nodiscard]] COTUNE_DECL static expression parse(std::string_view text);

  /// A constant.
  [[nodiscard]] COTUNE_DECL static expression constant(std::int64_t v);

  /// The value for the variables `names` gives; throws expression_error for an unknown name, an
  /// overflow or a division by zero.
  [[nodiscard]] COTUNE_DECL std::int64_t evaluate(const lookup& names) const;

  /// The names the expression reads, in order of appearance (with repeats).
  [[nodiscard]] COTUNE_DECL std::vector<std::string> names() const;
  /// The expression as written.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

private:
  enum class op { number, name, negate, logical_not, add, sub, mul, div, mod, eq, ne, lt, le, gt, ge, logical_and, logical_or, cdiv, min, max };
  struct node {
    op kind;
    std::int64_t number;
    std::string name;
    std::size_t column;
  };

  [[noreturn]] COTUNE_DECL void overflow(const node& n) const;

  /// Recursive descent, emitting nodes in postfix order (expression.ipp).
  struct parser;

  std::string text_;
  std::vector<node> nodes_;
};

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/expression.ipp>
#endif
