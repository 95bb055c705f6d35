#pragma once
/// \file The bodies of tune/key_distance.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <cotune/tune/key_distance.hpp>

namespace cotune {

COTUNE_DECL key_shape key_shape::of(std::string_view text) {
  key_shape s;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto name_char = [&](char c) { return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  std::size_t i = 0;
  while (i < text.size()) {
    const bool continues_name = i > 0 && name_char(text[i - 1]);
    const bool sign = (text[i] == '-' || text[i] == '+') && i + 1 < text.size() && digit(text[i + 1]);
    if (!continues_name && (digit(text[i]) || sign)) {
      std::size_t end = i + (sign ? 1 : 0);
      while (end < text.size() && (digit(text[end]) || text[end] == '.')) ++end;
      if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) { // an exponent: 1e+06
        std::size_t e = end + 1;
        if (e < text.size() && (text[e] == '-' || text[e] == '+')) ++e;
        if (e < text.size() && digit(text[e])) {
          end = e;
          while (end < text.size() && digit(text[end])) ++end;
        }
      }
      if (end >= text.size() || !name_char(text[end])) { // "12abc" is a name, not a number
        s.values.push_back(std::strtod(std::string(text.substr(i, end - i)).c_str(), nullptr));
        s.skeleton += '#';
        i = end;
        continue;
      }
    }
    s.skeleton += text[i++];
  }
  return s;
}

COTUNE_DECL std::optional<double> key_distance(const key_shape& a, const key_shape& b) {
  if (a.skeleton != b.skeleton || a.values.size() != b.values.size()) return std::nullopt;
  auto scaled = [](double v) { return std::copysign(std::log2(1.0 + std::fabs(v)), v); };
  double sum = 0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    const double d = scaled(a.values[i]) - scaled(b.values[i]);
    sum += d * d;
  }
  return std::sqrt(sum);
}

COTUNE_DECL std::optional<double> key_distance(std::string_view a, std::string_view b) {
  return key_distance(key_shape::of(a), key_shape::of(b));
}

} // namespace cotune
