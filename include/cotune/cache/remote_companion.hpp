#pragma once
/// \file Companion entries: entries of another key stored beside a remote entry, so that one request
/// fetches both (the winner's binary beside its tuning result: a remote warm start in one round
/// trip, where the binary's key is otherwise known only once the result is read), and the shelf of
/// verified companions waiting to be asked for.
///
/// Every entry in a companion is framed under its own (key, name), exactly as if it had been stored
/// alone, and is checked that way: a companion can only ever serve what a direct fetch of that key
/// and name would have served. The companion also carries the digest of the entry it accompanies, so
/// one left over from an earlier write of that entry (another winner) is refused, not shelved.

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

#include <fmt/format.h>

#include <cotune/cache/entry_frame.hpp>
#include <cotune/cache/remote_backend.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune {

/// Entries filed under another key, to be stored beside a remote entry.
struct remote_companion {
  std::string key;                                          ///< the hex key the entries are filed under
  std::vector<std::pair<std::string, std::string>> entries; ///< file name, content
};

/// A cache that stores companions beside its entries and fetches them with the entry in one request
/// (`basic_remote_cache`), and reads its local part alone (to gather a companion without a remote
/// lookup). A plain file cache is not one: it has no remote store to save round trips to.
template <class C>
concept CompanionCache = requires(C& c, const C& cc, std::string_view s, const remote_companion& companion) {
  c.put_with_companion(s, s, companion);
  { cc.get_with_companion(s) } -> std::same_as<std::optional<std::string>>;
  { cc.local().get(s) } -> std::same_as<std::optional<std::string>>;
};

namespace detail {

inline constexpr std::string_view companion_magic = "cotune-companion 1\n";

/// The remote name of the companion of entry `name`.
[[nodiscard]] inline std::string companion_name(std::string_view name) { return "__companion__" + std::string(name); }

/// The companion's value (before its own frame): the digest of the entry it accompanies, its key,
/// and each entry framed under (key, name) with `secret`.
[[nodiscard]] inline std::string encode_companion(const remote_companion& c, std::string_view with_sha256,
                                                  std::string_view secret) {
  validate_remote_key(c.key);
  std::string out(companion_magic);
  out += fmt::format("with {}\nkey {}\n", with_sha256, c.key);
  for (const auto& [name, content] : c.entries) {
    validate_remote_file_name(name);
    const std::string framed = frame_entry(c.key, name, content, secret);
    out += fmt::format("entry {} {}\n", name, framed.size());
    out += framed;
  }
  return out;
}

/// A companion read back: its key and its entries, each verified under (key, name).
struct decoded_companion {
  std::string key;
  std::vector<std::pair<std::string, std::string>> entries;
};

/// The companion in `text` if it accompanies the entry whose digest is `with_sha256` and every entry
/// in it checks out under `secret`; anything else is nothing.
[[nodiscard]] inline std::optional<decoded_companion> decode_companion(std::string_view text,
                                                                       std::string_view with_sha256,
                                                                       std::string_view secret) {
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
  if (!with || !key || *with != fmt::format("with {}", with_sha256) || !key->starts_with("key ")) return std::nullopt;
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

/// Verified companion entries waiting to be asked for, process-wide, keyed by (store, key, name):
/// the store (a backend's address) keeps entries one backend verified, under its secret, from
/// being served through another. Entries leave when they are written to the local cache; the
/// oldest leave first past `byte_limit`.
class companion_shelf {
public:
  /// Shelved bytes at most: a few large binaries (a cubin is typically under 1 MiB).
  static constexpr std::size_t byte_limit = std::size_t(64) << 20;

  [[nodiscard]] static companion_shelf& instance() {
    static companion_shelf shelf;
    return shelf;
  }

  void stock(const void* store, const std::string& key, std::vector<std::pair<std::string, std::string>> entries) {
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

  [[nodiscard]] std::optional<std::string> find(const void* store, std::string_view key, std::string_view name) const {
    std::lock_guard lock(mutex_);
    auto it = items_.find(id{store, std::string(key), std::string(name)});
    if (it == items_.end()) return std::nullopt;
    return it->second;
  }

  void remove(const void* store, std::string_view key, std::string_view name) {
    std::lock_guard lock(mutex_);
    auto it = items_.find(id{store, std::string(key), std::string(name)});
    if (it == items_.end()) return;
    bytes_ -= it->second.size();
    items_.erase(it);
    if (items_.empty()) order_.clear();
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

private:
  using id = std::tuple<const void*, std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<id, std::string> items_;
  std::deque<id> order_;
  std::size_t bytes_ = 0;
};

} // namespace detail

} // namespace cotune
