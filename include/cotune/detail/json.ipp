#pragma once
/// \file The bodies of detail/json.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include <simdjson.h>

#include <cotune/detail/json.hpp>

namespace cotune::detail {

COTUNE_DECL void json_quote(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
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
