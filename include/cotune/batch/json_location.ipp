#pragma once
/// \file The bodies of batch/json_location.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/core.h>

#include <cotune/batch/json_location.hpp>

namespace cotune::batch {

COTUNE_DECL json_path json_path::operator/(std::string_view key) const {
  json_path p = *this;
  p.segments_.emplace_back(std::string(key));
  return p;
}

COTUNE_DECL json_path json_path::operator[](std::size_t index) const {
  json_path p = *this;
  p.segments_.emplace_back(index);
  return p;
}

COTUNE_DECL std::string json_path::text() const {
  std::string out;
  for (const auto& s : segments_) {
    if (auto* k = std::get_if<std::string>(&s)) out += (out.empty() ? "" : ".") + *k;
    else
      out += fmt::format(COTUNE_FMT("[{}]"), std::get<std::size_t>(s));
  }
  return out.empty() ? std::string("(top level)") : out;
}

namespace detail {

/// A forward scanner over JSON text that skips values without building them.
struct json_scanner {
  std::string_view s;
  std::size_t at = 0;

  void ws() {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) ++at;
  }
  /// A string's raw content (escapes kept), `at` after the closing quote.
  std::string_view string() {
    const std::size_t start = ++at;
    while (at < s.size() && s[at] != '"') at += s[at] == '\\' ? 2 : 1;
    const std::size_t end = std::min(at, s.size());
    ++at;
    return s.substr(start, end - start);
  }
  void value() {
    ws();
    if (at >= s.size()) return;
    const char c = s[at];
    if (c == '"') {
      string();
    } else if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at;
      for (;;) {
        ws();
        if (at >= s.size()) return;
        if (s[at] == close) {
          ++at;
          return;
        }
        if (s[at] == ',' || s[at] == ':') {
          ++at;
          continue;
        }
        value();
      }
    } else {
      while (at < s.size() && s[at] != ',' && s[at] != '}' && s[at] != ']' && s[at] != ' ' && s[at] != '\n' &&
             s[at] != '\t' && s[at] != '\r')
        ++at;
    }
  }
};

} // namespace detail

namespace detail {

/// Where the value at `path` starts in `text`, and whether the whole path exists (else: where the
/// deepest part of it that exists starts).
inline std::pair<std::size_t, bool> locate_offset(std::string_view text, const json_path& path) {
  detail::json_scanner sc{text};
  sc.ws();
  std::size_t found = sc.at;
  for (const auto& seg : path.segments()) {
    sc.ws();
    if (sc.at >= text.size()) break;
    bool hit = false;
    if (auto* key = std::get_if<std::string>(&seg)) {
      if (text[sc.at] != '{') break;
      ++sc.at;
      for (;;) {
        sc.ws();
        if (sc.at >= text.size() || text[sc.at] != '"') break;
        const auto k = sc.string();
        sc.ws();
        if (sc.at < text.size() && text[sc.at] == ':') ++sc.at;
        sc.ws();
        if (k == *key) {
          hit = true;
          break;
        }
        sc.value();
        sc.ws();
        if (sc.at < text.size() && text[sc.at] == ',') ++sc.at;
      }
    } else {
      if (text[sc.at] != '[') break;
      ++sc.at;
      const std::size_t want = std::get<std::size_t>(seg);
      for (std::size_t i = 0;; ++i) {
        sc.ws();
        if (sc.at >= text.size() || text[sc.at] == ']') break;
        if (i == want) {
          hit = true;
          break;
        }
        sc.value();
        sc.ws();
        if (sc.at < text.size() && text[sc.at] == ',') ++sc.at;
      }
    }
    if (!hit) return {found, false};
    found = sc.at;
  }
  return {found, true};
}

} // namespace detail

COTUNE_DECL text_location locate(std::string_view text, const json_path& path) {
  const std::size_t found = detail::locate_offset(text, path).first;
  text_location loc;
  for (std::size_t i = 0; i < found && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

COTUNE_DECL json_locator::json_locator(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts_.push_back(i + 1);
}

COTUNE_DECL text_location json_locator::operator()(const json_path& path) {
  const auto& seg = path.segments();
  std::optional<std::size_t> offset;
  // The next element of the array whose element the last call found: one value on from there.
  if (have_last_ && !seg.empty() && seg.size() == last_.segments().size()) {
    const auto* index = std::get_if<std::size_t>(&seg.back());
    const auto* last_index = std::get_if<std::size_t>(&last_.segments().back());
    if (index && last_index && *index == *last_index + 1 &&
        std::equal(seg.begin(), seg.end() - 1, last_.segments().begin())) {
      detail::json_scanner sc{text_, last_offset_};
      sc.value();
      sc.ws();
      if (sc.at < text_.size() && text_[sc.at] == ',') {
        ++sc.at;
        sc.ws();
        if (sc.at < text_.size() && text_[sc.at] != ']') offset = sc.at;
      }
    }
  }
  if (!offset) {
    const auto [at, whole] = detail::locate_offset(text_, path);
    offset = at;
    have_last_ = whole;
  }
  if (have_last_) {
    last_ = path;
    last_offset_ = *offset;
  }
  const std::size_t at = std::min(*offset, text_.size());
  const auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), at) - 1;
  return {static_cast<std::size_t>(line - line_starts_.begin()) + 1, at - *line + 1};
}
} // namespace cotune::batch
