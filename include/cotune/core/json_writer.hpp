#pragma once
/// \file `cotune::json_writer`: the one way cotune writes JSON (stored results, JSON Lines events,
/// tool output). Commas, nesting and escaping are its job; reading stays on simdjson.
///
///     cotune::json_writer w;
///     w.begin_object().field("kernel", "saxpy").field("ms", 0.25).key("tags").begin_array().end_array();
///     w.end_object();   // {"kernel": "saxpy", "ms": 0.25, "tags": []}

#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include <cotune/detail/json.hpp>

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
  json_writer& key(std::string_view name) {
    if (levels_.empty() || levels_.back().closer != '}' || after_key_)
      throw std::logic_error("json_writer: a key outside an object, or two keys in a row");
    comma();
    detail::json_quote(out_, name);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }

  json_writer& value(std::string_view s) {
    separate();
    detail::json_quote(out_, s);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  json_writer& value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
  }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  json_writer& value(T n) {
    separate();
    out_ += fmt::format("{}", n);
    return *this;
  }
  json_writer& value(double d) {
    separate();
    out_ += detail::json_number(d);
    return *this;
  }
  json_writer& null() {
    separate();
    out_ += "null";
    return *this;
  }
  /// A value that is already JSON text (a config's `json()`), inserted as it is.
  json_writer& raw(std::string_view json) {
    separate();
    out_ += json;
    return *this;
  }

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
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (levels_.empty()) {
      if (!out_.empty()) throw std::logic_error("json_writer: a second top-level value");
      return;
    }
    if (levels_.back().closer == '}') throw std::logic_error("json_writer: a value in an object needs a key first");
    comma();
  }
  void comma() {
    if (!levels_.back().empty) out_ += ", ";
    levels_.back().empty = false;
  }
  json_writer& open(char c) {
    separate();
    out_ += c;
    levels_.push_back({c == '{' ? '}' : ']'});
    return *this;
  }
  json_writer& close(char c) {
    if (levels_.empty() || levels_.back().closer != c || after_key_)
      throw std::logic_error("json_writer: unbalanced close");
    levels_.pop_back();
    out_ += c;
    return *this;
  }

  std::string out_;
  std::vector<level> levels_;
  bool after_key_ = false;
};

} // namespace cotune
