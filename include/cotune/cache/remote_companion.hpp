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

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
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

#include <cotune/detail/config.hpp>
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
[[nodiscard]] COTUNE_DECL std::string encode_companion(const remote_companion& c, std::string_view with_sha256,
                                                       std::string_view secret);

/// A companion read back: its key and its entries, each verified under (key, name).
struct decoded_companion {
  std::string key;
  std::vector<std::pair<std::string, std::string>> entries;
};

/// The companion in `text` if it accompanies the entry whose digest is `with_sha256` and every entry
/// in it checks out under `secret`; anything else is nothing.
[[nodiscard]] COTUNE_DECL std::optional<decoded_companion> decode_companion(std::string_view text,
                                                                            std::string_view with_sha256,
                                                                            std::string_view secret);

/// Verified companion entries waiting to be asked for, process-wide, keyed by (store, key, name):
/// the store (a backend's address) keeps entries one backend verified, under its secret, from
/// being served through another. Entries leave when they are written to the local cache; the
/// oldest leave first past `byte_limit`.
class companion_shelf {
public:
  /// Shelved bytes at most: a few large binaries (a cubin is typically under 1 MiB).
  static constexpr std::size_t byte_limit = std::size_t(64) << 20;

  [[nodiscard]] COTUNE_DECL static companion_shelf& instance();

  COTUNE_DECL void stock(const void* store, const std::string& key,
                         std::vector<std::pair<std::string, std::string>> entries);

  [[nodiscard]] COTUNE_DECL std::optional<std::string> find(const void* store, std::string_view key,
                                                            std::string_view name) const;

  COTUNE_DECL void remove(const void* store, std::string_view key, std::string_view name);

  [[nodiscard]] COTUNE_DECL std::size_t size() const;

private:
  using id = std::tuple<const void*, std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<id, std::string> items_;
  std::deque<id> order_;
  std::size_t bytes_ = 0;
};

} // namespace detail

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/remote_companion.ipp>
#endif
