#pragma once
/// \file The bodies of detail/json.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/detail/json.hpp>

namespace cotune::detail {

COTUNE_DECL std::size_t utf8_length(std::string_view t, std::size_t at) {
  const auto b = [&](std::size_t k) { return at + k < t.size() ? static_cast<unsigned char>(t[at + k]) : 0u; };
  const auto cont = [&](std::size_t k) { return (b(k) & 0xC0u) == 0x80u; };
  const unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return b(1) >= lo && b(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return b(1) >= lo && b(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

COTUNE_DECL std::string utf8_sanitized(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = utf8_length(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD"; // U+FFFD
      ++i;
    }
  }
  return out;
}

COTUNE_DECL void json_quote(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (const std::size_t n = utf8_length(s, i)) {
        out.append(s.substr(i, n));
        i += n - 1;
      } else {
        out += "\\ufffd";
      }
      continue;
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        out += "\\u00";
        out.push_back(hex[(c >> 4) & 0xF]);
        out.push_back(hex[c & 0xF]);
      } else {
        out.push_back(c);
      }
    }
  }
  out.push_back('"');
}

COTUNE_DECL std::string double_text(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string out(buf, end);
  if (std::isfinite(d) && out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

COTUNE_DECL std::string normalize_nonfinite(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  bool in_string = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < in.size()) out.push_back(in[++i]);
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    auto rest = in.substr(i);
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (rest.starts_with(token)) {
        out += "null";
        i += token.size() - 1;
        goto next;
      }
    }
    out.push_back(c);
  next:;
  }
  return out;
}

namespace json_syntax {

/// How a byte is shown in a syntax error: the character, or its value when it is not printable.
COTUNE_DECL std::string shown_byte(std::string_view text, std::size_t at) {
  if (at >= text.size()) return "the end of the text";
  const auto c = static_cast<unsigned char>(text[at]);
  if (c == '\'') return "a single quote (JSON strings take double quotes)";
  if (c >= 0x21 && c < 0x7F) {
    // A word (a bare name: `True`, `None`, `foo`) is shown whole, up to 20 characters.
    std::size_t end = at;
    while (end < text.size() && end - at < 20 &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    if (end > at + 1) return fmt::format(COTUNE_FMT("'{}'"), text.substr(at, end - at));
    return fmt::format(COTUNE_FMT("'{}'"), static_cast<char>(c));
  }
  if (c == ' ') return "a space";
  if (text.substr(at, 3) == "\xEF\xBB\xBF") return "a byte-order mark (save the file as UTF-8 without one)";
  if (c == '\n') return "the end of the line";
  return fmt::format(COTUNE_FMT("byte 0x{:02X}"), static_cast<unsigned>(c));
}

COTUNE_DECL bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

} // namespace json_syntax

COTUNE_DECL std::optional<json_syntax_error> find_json_syntax_error(std::string_view t, bool nonfinite) {
  using namespace json_syntax;
  // simdjson's nesting limit (DEFAULT_MAX_DEPTH): deeper documents are refused as well.
  constexpr std::size_t max_depth = 1024;
  std::size_t i = 0;
  std::vector<char> open; // '{' or '[' of each container the scan is inside
  const auto fail = [&](std::size_t at, std::string what) {
    json_syntax_error e;
    e.offset = std::min(at, t.size());
    for (std::size_t k = 0; k < e.offset; ++k) {
      if (t[k] == '\n') {
        ++e.line;
        e.column = 1;
      } else if ((static_cast<unsigned char>(t[k]) & 0xC0u) != 0x80u) {
        ++e.column;
      }
    }
    e.what = std::move(what);
    return std::optional<json_syntax_error>(std::move(e));
  };
  const auto ws = [&] {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  };
  const auto found = [&](std::string_view expected) {
    if (t.substr(i, 2) == "//" || t.substr(i, 2) == "/*")
      return fail(i, fmt::format(COTUNE_FMT("{}, found a comment (JSON has no comments)"), expected));
    return fail(i, fmt::format(COTUNE_FMT("{}, found {}"), expected, shown_byte(t, i)));
  };
  // The string at i (t[i] == '"'); advances past it.
  const auto string = [&]() -> std::optional<json_syntax_error> {
    const std::size_t start = i++;
    while (true) {
      if (i >= t.size()) return fail(start, "a string starts here and is never closed (a '\"' is missing)");
      const auto c = static_cast<unsigned char>(t[i]);
      if (c == '"') {
        ++i;
        return std::nullopt;
      }
      if (c == '\\') {
        if (i + 1 >= t.size()) return fail(start, "a string starts here and is never closed (a '\"' is missing)");
        const char e = t[i + 1];
        if (e == 'u') {
          // \uD800-\uDBFF starts a surrogate pair: a \uDC00-\uDFFF must follow it, and only it.
          const auto unit = [&](std::size_t at) -> long {
            if (at + 6 > t.size() || t[at] != '\\' || t[at + 1] != 'u') return -1;
            for (std::size_t k = 2; k < 6; ++k)
              if (!is_hex(t[at + k])) return -1;
            return std::stol(std::string(t.substr(at + 2, 4)), nullptr, 16);
          };
          const long u = unit(i);
          if (u < 0) return fail(i, "a \\u escape needs four hexadecimal digits (\\u00e9)");
          if (u >= 0xDC00 && u <= 0xDFFF)
            return fail(i, "a \\u escape of a low surrogate with no high surrogate before it");
          if (u >= 0xD800 && u <= 0xDBFF) {
            const long low = unit(i + 6);
            if (low < 0xDC00 || low > 0xDFFF)
              return fail(i, "a \\u escape of a high surrogate not followed by a low one (\\uDC00-\\uDFFF)");
            i += 6;
          }
          i += 6;
        } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos && e != '\0') {
          i += 2;
        } else {
          return fail(i, "an invalid escape in a string (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)");
        }
      } else if (c < 0x20) {
        return fail(i, c == '\n' ? std::string("a line break inside a string (write it as \\n, or close the string)")
                                 : fmt::format(COTUNE_FMT("a control character (0x{:02X}) inside a string (write "
                                                          "it escaped, as \\u00{:02X})"),
                                               static_cast<unsigned>(c), static_cast<unsigned>(c)));
      } else if (const std::size_t n = utf8_length(t, i)) {
        i += n;
      } else {
        return fail(i, "a string holds bytes that are not UTF-8");
      }
    }
  };
  // The number at i; advances past it.
  const auto number = [&]() -> std::optional<json_syntax_error> {
    const std::size_t start = i;
    const auto digits = [&] {
      const std::size_t from = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      return i > from;
    };
    if (t[i] == '-') ++i;
    if (i < t.size() && t[i] == '0') {
      ++i;
      if (i < t.size() && t[i] >= '0' && t[i] <= '9') return fail(start, "a number with a leading zero");
    } else if (!digits()) {
      return fail(start, "a malformed number (a '-' must be followed by digits)");
    }
    if (i < t.size() && t[i] == '.') {
      ++i;
      if (!digits()) return fail(start, "a malformed number (a '.' must be followed by digits)");
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      if (!digits()) return fail(start, "a malformed number (an exponent must have digits)");
    }
    return std::nullopt;
  };
  // One scalar or the opening of a container, at i after whitespace; advances past it. `scalar` is set
  // when a whole value was read.
  const auto value = [&](bool& scalar) -> std::optional<json_syntax_error> {
    scalar = true;
    if (i >= t.size()) return found("expected a value");
    const char c = t[i];
    if (c == '{' || c == '[') {
      if (open.size() == max_depth)
        return fail(i, fmt::format(COTUNE_FMT("nested more than {} levels deep"), max_depth));
      open.push_back(c);
      ++i;
      scalar = false;
      return std::nullopt;
    }
    // simdjson counts a scalar as a level too: 1024 containers hold only empty ones.
    if (open.size() == max_depth) return fail(i, fmt::format(COTUNE_FMT("nested more than {} levels deep"), max_depth));
    if (c == '"') return string();
    if (nonfinite) {
      for (std::string_view word : {"-Infinity", "Infinity", "NaN"})
        if (t.substr(i, word.size()) == word) {
          i += word.size();
          return std::nullopt;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (std::string_view word : {"true", "false", "null"})
      if (t.substr(i, word.size()) == word) {
        i += word.size();
        return std::nullopt;
      }
    return found("expected a value (a string, a number, an object, an array, true, false or null)");
  };
  ws();
  if (i >= t.size()) return fail(i, "the text is empty (expected a JSON value)");
  enum class want { value, value_or_close, member_or_close, member, after_value };
  want next = want::value;
  while (true) {
    ws();
    switch (next) {
    case want::value_or_close:
      if (i < t.size() && t[i] == ']') {
        ++i;
        open.pop_back();
        next = want::after_value;
        continue;
      }
      [[fallthrough]];
    case want::value: {
      bool scalar = true;
      if (auto e = value(scalar)) return e;
      next = scalar ? want::after_value : (open.back() == '{' ? want::member_or_close : want::value_or_close);
      continue;
    }
    case want::member_or_close:
      if (i < t.size() && t[i] == '}') {
        ++i;
        open.pop_back();
        next = want::after_value;
        continue;
      }
      [[fallthrough]];
    case want::member:
      if (i >= t.size() || t[i] != '"')
        return found(next == want::member && i < t.size() && t[i] == '}'
                         ? "expected a member name after ',' (JSON allows no trailing comma)"
                         : "expected a member name in double quotes");
      if (auto e = string()) return e;
      ws();
      if (i >= t.size() || t[i] != ':') return found("expected ':' after the member name");
      ++i;
      next = want::value;
      continue;
    case want::after_value:
      if (open.empty()) {
        if (i < t.size()) return found("expected the end of the text after the JSON value");
        return std::nullopt;
      }
      if (i < t.size() && t[i] == ',') {
        ++i;
        if (open.back() == '{') {
          next = want::member;
        } else {
          ws();
          if (i < t.size() && t[i] == ']') return fail(i, "expected a value after ',' (JSON allows no trailing comma)");
          next = want::value;
        }
        continue;
      }
      if (i < t.size() && t[i] == (open.back() == '{' ? '}' : ']')) {
        ++i;
        open.pop_back();
        continue;
      }
      return found(open.back() == '{' ? "expected ',' or '}' after an object member"
                                      : "expected ',' or ']' after an array element");
    }
  }
}

COTUNE_DECL bool valid_utf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

COTUNE_DECL bool json_read_timing(simdjson::dom::element e, double& out) {
  if (e.is_null()) {
    out = INFINITY;
    return true;
  }
  if (e.is_double()) return e.get_double().get(out) == simdjson::SUCCESS;
  if (e.is_int64()) {
    out = static_cast<double>(std::int64_t(e.get_int64()));
    return true;
  }
  if (e.is_uint64()) {
    out = static_cast<double>(std::uint64_t(e.get_uint64()));
    return true;
  }
  return false;
}

} // namespace cotune::detail
