#pragma once
/// \file A small JSON writer and the reading helpers cotune uses over simdjson (included by json.ipp;
/// with COTUNE_SEPARATE_COMPILATION this header only declares `simdjson::dom::element`).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cmath>
#include <cstddef>
#include <optional>
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

/// The length of the UTF-8 sequence at `at` of `s` (RFC 3629: no overlong forms, no surrogates, nothing
/// above U+10FFFF), or 0 if none starts there.
[[nodiscard]] COTUNE_DECL std::size_t utf8_length(std::string_view s, std::size_t at);

/// `s` with each byte that starts no UTF-8 sequence replaced by U+FFFD: text from outside (a compiler's
/// message echoing a Latin-1 source line) made fit for JSON, which must be UTF-8.
[[nodiscard]] COTUNE_DECL std::string utf8_sanitized(std::string_view s);

/// Appends `s` as a JSON string literal (quoted, escaped; UTF-8 passed through, and each byte that starts
/// no UTF-8 sequence written as U+FFFD, so that what cotune writes is always JSON).
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

/// Where a JSON text first breaks the grammar, and how.
struct json_syntax_error {
  std::size_t offset = 0;           ///< the byte it was found at
  std::size_t line = 1, column = 1; ///< 1-based; the column counts characters (UTF-8), not bytes
  std::string what;                 ///< "expected ',' or '}' after an object member, found '\"'"
};

/// The first place where `text` is not JSON (RFC 8259; with `nonfinite`, also the bare NaN, Infinity and
/// -Infinity that normalize_nonfinite accepts), for the error a reader gives when simdjson refuses a
/// file: simdjson says what kind of error, not where. Linear in the text's size, with a stack of its
/// own (not the call stack) for the nesting, so a hostile file costs neither time nor stack. Nothing
/// when the grammar holds (simdjson then refused the text for another reason, and says which).
[[nodiscard]] COTUNE_DECL std::optional<json_syntax_error> find_json_syntax_error(std::string_view text,
                                                                                  bool nonfinite = false);

/// Whether `s` is valid UTF-8 (what a JSON string must be).
[[nodiscard]] COTUNE_DECL bool valid_utf8(std::string_view s);

/// Reads a number (integer or floating) or null (as +inf) from a simdjson element.
[[nodiscard]] COTUNE_DECL bool json_read_timing(simdjson::dom::element e, double& out);

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/json.ipp>
#endif
