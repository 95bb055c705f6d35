#pragma once
/// \file The bodies of cache/remote_companion.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <concepts>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/cache/entry_frame.hpp>
#include <cotune/cache/remote_companion.hpp>
#include <cotune/cache/remote_backend.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

COTUNE_DECL std::string encode_companion(const remote_companion& c, std::string_view with_sha256, std::string_view secret) {
  validate_remote_key(c.key);
  std::string out(companion_magic);
  out += fmt::format(COTUNE_FMT("with {}\nkey {}\n"), with_sha256, c.key);
  for (const auto& [name, content] : c.entries) {
    validate_remote_file_name(name);
    const std::string framed = frame_entry(c.key, name, content, secret);
    out += fmt::format(COTUNE_FMT("entry {} {}\n"), name, framed.size());
    out += framed;
  }
  return out;
}

COTUNE_DECL std::optional<decoded_companion> decode_companion(std::string_view text, std::string_view with_sha256, std::string_view secret) {
  if (!text.starts_with(companion_magic)) return std::nullopt;
  text.remove_prefix(companion_magic.size());
  auto line = [&]() -> std::optional<std::string_view> {
    const auto end = text.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    auto l = text.substr(0, end);
    text.remove_prefix(end + 1);
    return l;
  };
  auto with = line(), key = line();
  if (!with || !key || *with != fmt::format(COTUNE_FMT("with {}"), with_sha256) || !key->starts_with("key "))
    return std::nullopt;
  decoded_companion out;
  out.key = key->substr(4);
  try {
    validate_remote_key(out.key);
    while (!text.empty()) {
      auto head = line();
      if (!head || !head->starts_with("entry ")) return std::nullopt;
      const auto fields = head->substr(6);
      const auto space = fields.rfind(' ');
      if (space == std::string_view::npos) return std::nullopt;
      const std::string name(fields.substr(0, space));
      validate_remote_file_name(name);
      std::size_t size = 0;
      for (char ch : fields.substr(space + 1)) {
        if (ch < '0' || ch > '9' || size > text.size()) return std::nullopt;
        size = size * 10 + static_cast<std::size_t>(ch - '0');
      }
      if (space + 1 == fields.size() || size > text.size()) return std::nullopt;
      auto checked = unframe(out.key, name, text.substr(0, size), secret);
      if (!checked) return std::nullopt;
      out.entries.emplace_back(name, std::string(checked.payload));
      text.remove_prefix(size);
    }
  } catch (const cache_error&) {
    return std::nullopt;
  }
  return out;
}

COTUNE_DECL companion_shelf& companion_shelf::instance() {
  static companion_shelf shelf;
  return shelf;
}

COTUNE_DECL void companion_shelf::stock(const void* store, const std::string& key, std::vector<std::pair<std::string, std::string>> entries) {
  std::lock_guard lock(mutex_);
  for (auto& [name, content] : entries) {
    id k{store, key, name};
    if (auto it = items_.find(k); it != items_.end()) {
      bytes_ -= it->second.size();
      items_.erase(it);
    }
    bytes_ += content.size();
    items_.emplace(k, std::move(content));
    order_.push_back(std::move(k));
  }
  while (bytes_ > byte_limit && !order_.empty()) {
    if (auto it = items_.find(order_.front()); it != items_.end()) {
      bytes_ -= it->second.size();
      items_.erase(it);
    }
    order_.pop_front();
  }
  if (items_.empty()) order_.clear();
}

COTUNE_DECL std::optional<std::string> companion_shelf::find(const void* store, std::string_view key, std::string_view name) const {
  std::lock_guard lock(mutex_);
  auto it = items_.find(id{store, std::string(key), std::string(name)});
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

COTUNE_DECL void companion_shelf::remove(const void* store, std::string_view key, std::string_view name) {
  std::lock_guard lock(mutex_);
  auto it = items_.find(id{store, std::string(key), std::string(name)});
  if (it == items_.end()) return;
  bytes_ -= it->second.size();
  items_.erase(it);
  if (items_.empty()) order_.clear();
}

COTUNE_DECL std::size_t companion_shelf::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

} // namespace cotune::detail
