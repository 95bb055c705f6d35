#pragma once
/// \file The bodies of core/json_writer.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <stdexcept>
#include <string_view>

#include <cotune/core/json_writer.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

COTUNE_DECL json_writer& json_writer::key(std::string_view name) {
  if (levels_.empty() || levels_.back().closer != '}' || after_key_)
    throw std::logic_error("json_writer: a key outside an object, or two keys in a row");
  comma();
  detail::json_quote(out_, name);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

COTUNE_DECL json_writer& json_writer::value(std::string_view s) {
  separate();
  detail::json_quote(out_, s);
  return *this;
}

COTUNE_DECL json_writer& json_writer::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

COTUNE_DECL json_writer& json_writer::value(double d) {
  separate();
  out_ += detail::json_number(d);
  return *this;
}

COTUNE_DECL json_writer& json_writer::null() {
  separate();
  out_ += "null";
  return *this;
}

COTUNE_DECL json_writer& json_writer::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

COTUNE_DECL void json_writer::separate() {
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

COTUNE_DECL void json_writer::comma() {
  if (!levels_.back().empty) out_ += ", ";
  levels_.back().empty = false;
}

COTUNE_DECL json_writer& json_writer::open(char c) {
  separate();
  out_ += c;
  levels_.push_back({c == '{' ? '}' : ']'});
  return *this;
}

COTUNE_DECL json_writer& json_writer::close(char c) {
  if (levels_.empty() || levels_.back().closer != c || after_key_)
    throw std::logic_error("json_writer: unbalanced close");
  levels_.pop_back();
  out_ += c;
  return *this;
}

} // namespace cotune
