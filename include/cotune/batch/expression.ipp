#pragma once
/// \file The bodies of batch/expression.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cstdint>

#include <fmt/core.h>

#include <cotune/batch/expression.hpp>

namespace cotune::batch {

/// Recursive descent, emitting nodes in postfix order (evaluated with one stack).
struct expression::parser {
  expression& e;
  std::string_view s;
  std::size_t at = 0;
  std::size_t depth = 0;

  /// One level of nesting (a parenthesis, a call, a unary operator) for the life of the guard.
  struct nested {
    parser& p;
    explicit nested(parser& q) : p(q) {
      if (++p.depth > max_depth)
        throw expression_error(fmt::format(COTUNE_FMT("'{}' nests deeper than {} levels at column {} (parentheses, "
                                                      "calls and unary operators count); write it flatter"),
                                           shown(p.s), max_depth, p.at + 1),
                               p.at);
    }
    ~nested() { --p.depth; }
    nested(const nested&) = delete;
    nested& operator=(const nested&) = delete;
  };
  /// The expression as messages quote it: whole when short, else its start.
  static std::string shown(std::string_view text) {
    return text.size() <= 80 ? std::string(text)
                             : fmt::format(COTUNE_FMT("{}... ({} characters)"), text.substr(0, 60), text.size());
  }

  void skip() {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s.substr(at, tok.size()) != tok) return false;
    // '<' must not take the first half of '<=', '!' of '!=', '&' needs '&&'.
    if (tok.size() == 1 && at + 1 < s.size() && s[at + 1] == '=' && (tok == "<" || tok == ">" || tok == "!"))
      return false;
    at += tok.size();
    return true;
  }
  void emit(op k, std::size_t column) { e.nodes_.push_back(node{k, 0, {}, column}); }

  void parse_or() {
    parse_and();
    for (std::size_t c = at; eat("||"); c = at) { parse_and(); emit(op::logical_or, c); }
  }
  void parse_and() {
    parse_cmp();
    for (std::size_t c = at; eat("&&"); c = at) { parse_cmp(); emit(op::logical_and, c); }
  }
  void parse_cmp() {
    parse_sum();
    for (;;) {
      const std::size_t c = at;
      op k;
      if (eat("==")) k = op::eq;
      else if (eat("!=")) k = op::ne;
      else if (eat("<=")) k = op::le;
      else if (eat(">=")) k = op::ge;
      else if (eat("<")) k = op::lt;
      else if (eat(">")) k = op::gt;
      else return;
      parse_sum();
      emit(k, c);
    }
  }
  void parse_sum() {
    parse_product();
    for (;;) {
      const std::size_t c = at;
      if (eat("+")) { parse_product(); emit(op::add, c); }
      else if (eat("-")) { parse_product(); emit(op::sub, c); }
      else return;
    }
  }
  void parse_product() {
    parse_unary();
    for (;;) {
      const std::size_t c = at;
      if (eat("*")) { parse_unary(); emit(op::mul, c); }
      else if (eat("/")) { parse_unary(); emit(op::div, c); }
      else if (eat("%")) { parse_unary(); emit(op::mod, c); }
      else return;
    }
  }
  void parse_unary() {
    const std::size_t c = at;
    const nested level(*this);
    if (eat("-")) { parse_unary(); emit(op::negate, c); return; }
    if (eat("!")) { parse_unary(); emit(op::logical_not, c); return; }
    if (eat("+")) { parse_unary(); return; }
    parse_primary();
  }
  void parse_primary() {
    skip();
    const std::size_t c = at;
    if (at >= s.size())
      throw expression_error(fmt::format(COTUNE_FMT("'{}' ends where a number or a name was expected"), shown(s)), at);
    if (eat("(")) {
      parse_or();
      if (!eat(")"))
        throw expression_error(fmt::format(COTUNE_FMT("missing ')' at column {} of '{}'"), at + 1, shown(s)), at);
      return;
    }
    auto alpha = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; };
    auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
    if (digit(s[at])) {
      std::int64_t v = 0;
      while (at < s.size() && digit(s[at])) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[at] - '0', &v))
          throw expression_error(fmt::format(COTUNE_FMT("number too large at column {} of '{}'"), c + 1, shown(s)), c);
        ++at;
      }
      if (at < s.size() && alpha(s[at]))
        throw expression_error(fmt::format(COTUNE_FMT("'{}' at column {} of '{}' is neither a number nor a name"),
                                           s[at], at + 1, shown(s)),
                               at);
      e.nodes_.push_back(node{op::number, v, {}, c});
      return;
    }
    if (alpha(s[at])) {
      while (at < s.size() && (alpha(s[at]) || digit(s[at]))) ++at;
      std::string name(s.substr(c, at - c));
      if (name == "true" || name == "false") {
        e.nodes_.push_back(node{op::number, name == "true", {}, c});
        return;
      }
      if (eat("(")) {
        op f;
        if (name == "cdiv") f = op::cdiv;
        else if (name == "min") f = op::min;
        else if (name == "max") f = op::max;
        else
          throw expression_error(fmt::format(COTUNE_FMT("unknown function '{}' at column {} of '{}'; the functions are "
                                                        "cdiv, min and max"),
                                             name, c + 1, shown(s)),
                                 c);
        parse_or();
        if (!eat(","))
          throw expression_error(fmt::format(COTUNE_FMT("'{}' takes two arguments: expected ',' at column {} of '{}'"),
                                             name, at + 1, shown(s)),
                                 at);
        parse_or();
        if (!eat(")"))
          throw expression_error(fmt::format(COTUNE_FMT("missing ')' at column {} of '{}'"), at + 1, shown(s)), at);
        emit(f, c);
        return;
      }
      e.nodes_.push_back(node{op::name, 0, std::move(name), c});
      return;
    }
    throw expression_error(
        fmt::format(COTUNE_FMT("unexpected '{}' at column {} of '{}' (expected a number, a name or '(')"), s[at],
                    at + 1, shown(s)),
        at);
  }
};

COTUNE_DECL expression expression::parse(std::string_view text) {
  if (text.size() > max_length)
    throw expression_error(fmt::format(COTUNE_FMT("'{}' is longer than the {} characters an expression may have"),
                                       parser::shown(text), max_length),
                           max_length);
  expression e;
  e.text_ = text;
  parser p{e, text};
  p.skip();
  p.parse_or();
  p.skip();
  if (p.at < text.size())
    throw expression_error(
        fmt::format(COTUNE_FMT("unexpected '{}' at column {} of '{}'"), text[p.at], p.at + 1, parser::shown(text)),
        p.at);
  return e;
}

COTUNE_DECL expression expression::constant(std::int64_t v) {
  expression e;
  e.text_ = std::to_string(v);
  e.nodes_.push_back(node{op::number, v, {}, 0});
  return e;
}

COTUNE_DECL std::int64_t expression::evaluate(const lookup& names) const {
  std::vector<std::int64_t> stack;
  for (const auto& n : nodes_) {
    if (n.kind == op::number) {
      stack.push_back(n.number);
      continue;
    }
    if (n.kind == op::name) {
      auto v = names ? names(n.name) : std::nullopt;
      if (!v)
        throw expression_error(
            fmt::format(COTUNE_FMT("'{}' names no variable here (in '{}')"), n.name, parser::shown(text_)), n.column);
      stack.push_back(*v);
      continue;
    }
    if (n.kind == op::negate || n.kind == op::logical_not) {
      auto& a = stack.back();
      if (n.kind == op::logical_not) a = a == 0;
      else if (__builtin_sub_overflow(std::int64_t{0}, a, &a)) overflow(n);
      continue;
    }
    const std::int64_t b = stack.back();
    stack.pop_back();
    std::int64_t& a = stack.back();
    switch (n.kind) {
    case op::add: if (__builtin_add_overflow(a, b, &a)) overflow(n); break;
    case op::sub: if (__builtin_sub_overflow(a, b, &a)) overflow(n); break;
    case op::mul: if (__builtin_mul_overflow(a, b, &a)) overflow(n); break;
    case op::div:
    case op::mod:
      if (b == 0)
        throw expression_error(fmt::format(COTUNE_FMT("division by zero in '{}'"), parser::shown(text_)), n.column);
      if (a == INT64_MIN && b == -1) overflow(n);
      a = n.kind == op::div ? a / b : a % b;
      break;
    case op::eq: a = a == b; break;
    case op::ne: a = a != b; break;
    case op::lt: a = a < b; break;
    case op::le: a = a <= b; break;
    case op::gt: a = a > b; break;
    case op::ge: a = a >= b; break;
    case op::logical_and: a = a != 0 && b != 0; break;
    case op::logical_or: a = a != 0 || b != 0; break;
    case op::min: a = a < b ? a : b; break;
    case op::max: a = a < b ? b : a; break;
    case op::cdiv:
      if (b <= 0)
        throw expression_error(
            fmt::format(COTUNE_FMT("cdiv({}, {}) in '{}': the divisor must be positive"), a, b, parser::shown(text_)),
            n.column);
      a = a <= 0 ? 0 : a / b + (a % b != 0);
      break;
    default: break;
    }
  }
  return stack.back();
}

COTUNE_DECL std::vector<std::string> expression::names() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_)
    if (n.kind == op::name) out.push_back(n.name);
  return out;
}

COTUNE_DECL void expression::overflow(const node& n) const {
  throw expression_error(fmt::format(COTUNE_FMT("integer overflow in '{}'"), parser::shown(text_)), n.column);
}

} // namespace cotune::batch
