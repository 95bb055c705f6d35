#pragma once
/// \file A header planted for the header-bodies rule's own test (tests/layout/header_bodies.py): exactly one
/// body below breaks the rule, `planted_body`; the others are what it lets stay in a header.

#include <string>

namespace cotune::planted {

/// Breaks the rule: a non-template body of four lines.
inline int planted_body(int x) {
  int y = x + 1;
  y *= 2;
  y -= 3;
  return y;
}

/// A template: its body belongs in the header.
template <class T>
T twice(T x) {
  T y = x;
  y += x;
  (void)"a string with { and } in it";
  return y;
}

/// constexpr: evaluated where it is used.
constexpr int square_plus_one(int x) {
  int y = x * x;
  y += 1;
  y += 0;
  return y;
}

/// An abbreviated template.
inline auto first_of(const auto& v) {
  auto it = v.begin();
  auto value = *it;
  (void)it;
  return value;
}

struct accessors {
  [[nodiscard]] int get() const noexcept { return value_; }
  /// Three lines: the most a body may have.
  void set(int v, std::string s = {}) {
    value_ = v;
    name_ = std::move(s);
    ++changes_;
  }

private:
  int value_{0};
  std::string name_{"x"};
  int changes_ = 0;
};

template <class T>
struct holder {
  /// A member of a class template.
  void reset() {
    T fresh{};
    value = fresh;
    ++resets;
    (void)resets;
  }
  T value{};
  int resets = 0;
};

} // namespace cotune::planted
