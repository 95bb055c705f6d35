#pragma once
/// \file A small JSON writer and the reading helpers cotune uses over simdjson (included by json.ipp;
/// with COTUNE_SEPARATE_COMPILATION this header only declares `simdjson::dom::element`).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cmath>
#include <string>
#include <string_view>

#include <cotune/detail/config.hpp>

#if COTUNE_HEADER_ONLY
#include <simdjson.h>
#else
namespace simdjson::dom {
class element;
} // namespace simdjson::dom
#endif

namespace cotune::detail {

/// Appends `s` as a JSON string literal (quoted, escaped; non-ASCII bytes are passed through as UTF-8).
COTUNE_DECL void json_quote(std::string& out, std::string_view s);

[[nodiscard]] inline std::string json_quoted(std::string_view s) {
  std::string out;
  json_quote(out, s);
  return out;
}

/// Shortest text that reads back as the same double, always marked as floating ("2.0", "1e+300").
[[nodiscard]] COTUNE_DECL std::string double_text(double d);

/// A JSON number for finite doubles, `null` otherwise (standard JSON has no Infinity or NaN).
[[nodiscard]] inline std::string json_number(double d) { return std::isfinite(d) ? double_text(d) : "null"; }

/// Rewrites the bare tokens Infinity, -Infinity and NaN (which Python's json module writes and
/// simdjson rejects) as `null` outside of strings, so files written by other tools still parse.
[[nodiscard]] COTUNE_DECL std::string normalize_nonfinite(std::string_view in);

/// Whether `s` is valid UTF-8 (what a JSON string must be).
[[nodiscard]] COTUNE_DECL bool valid_utf8(std::string_view s);

/// Reads a number (integer or floating) or null (as +inf) from a simdjson element.
[[nodiscard]] COTUNE_DECL bool json_read_timing(simdjson::dom::element e, double& out);

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/json.ipp>
#endif
