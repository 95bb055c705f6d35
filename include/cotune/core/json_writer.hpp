#pragma once
/// \file `cotune::json_writer`: the one way cotune writes JSON (stored results, JSON Lines events,
/// tool output). Commas, nesting and escaping are its job; reading stays on simdjson.
///
///     cotune::json_writer w;
///     w.begin_object().field("kernel", "saxpy").field("ms", 0.25).key("tags").begin_array().end_array();
///     w.end_object();   // {"kernel": "saxpy", "ms": 0.25, "tags": []}

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include <cotune/detail/config.hpp>

namespace cotune {

/// Builds one JSON text in the house layout (", " between members, ": " after keys). Non-finite
/// doubles are written as null (standard JSON has no Infinity or NaN).
class json_writer {
public:
  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }

  /// The next member's name (inside an object).
  COTUNE_DECL json_writer& key(std::string_view name);

  COTUNE_DECL json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  COTUNE_DECL json_writer& value(bool b);
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  json_writer& value(T n) {
    separate();
    out_ += fmt::format("{}", n);
    return *this;
  }
  COTUNE_DECL json_writer& value(double d);
  COTUNE_DECL json_writer& null();
  /// A value that is already JSON text (a config's `json()`), inserted as it is.
  COTUNE_DECL json_writer& raw(std::string_view json);

  /// `key(name).value(v)`.
  template <class T>
  json_writer& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  /// The text so far (complete once every object and array is closed).
  [[nodiscard]] const std::string& str() const noexcept { return out_; }
  [[nodiscard]] std::string take() && { return std::move(out_); }

private:
  struct level {
    char closer;
    bool empty = true;
  };
  COTUNE_DECL void separate();
  COTUNE_DECL void comma();
  COTUNE_DECL json_writer& open(char c);
  COTUNE_DECL json_writer& close(char c);

  std::string out_;
  std::vector<level> levels_;
  bool after_key_ = false;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/core/json_writer.ipp>
#endif
