#pragma once
/// \file The `RemoteBackend` concept: a shared store of byte values under (hex key, file name), as
/// used by `basic_remote_cache` (spec §6.3), and the rules every remote key obeys.
///
/// A backend moves opaque bytes. What those bytes mean (the envelope with its checksum and signature)
/// is the remote cache's business, so every backend, Redis or one a user brings, gets the same
/// integrity checks.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include <cotune/cache/file_cache.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune {

/// Values found by a remote lookup: file name -> stored bytes. Names that were not found are absent.
using remote_values = std::map<std::string, std::string, std::less<>>;

namespace detail {

/// Shows a refused name with control characters escaped, so an error message cannot itself carry
/// a line break or a terminal escape.
[[nodiscard]] COTUNE_DECL std::string shown_name(std::string_view name);

} // namespace detail

/// True when `prefix` can start a remote key: 1 to 64 characters of [A-Za-z0-9_.-].
[[nodiscard]] constexpr bool is_valid_remote_prefix(std::string_view prefix) noexcept {
  if (prefix.empty() || prefix.size() > 64) return false;
  for (char c : prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

/// Throws cache_error unless `prefix` is a valid remote key prefix ([A-Za-z0-9_.-], 1 to 64 characters).
COTUNE_DECL void validate_remote_prefix(std::string_view prefix);

/// Throws cache_error unless `key` is a lower-case hex digest (what every cache key is).
COTUNE_DECL void validate_remote_key(std::string_view key);

/// Throws cache_error unless `name` is a plain cache file name (validate_cache_file_name's rule)
/// that also holds no ':' (the remote key separator), no whitespace and no control character, so a
/// name can never reach another key or, printed, forge a log line.
COTUNE_DECL void validate_remote_file_name(std::string_view name);

/// The remote key `<prefix>:<hex key>:<file name>`, every part validated (throws cache_error).
[[nodiscard]] COTUNE_DECL std::string remote_key(std::string_view prefix, std::string_view key, std::string_view name);

/// Reads many names under one key in one request: the found values, misses absent. Must not throw
/// for an unreachable store (a miss instead); throws cache_error for an invalid key or name.
template <class R>
concept RemoteReader = requires(R& r, std::string_view key, std::span<const std::string> names) {
  { r.get(key, names) } -> std::same_as<remote_values>;
};

/// Stores one value: true when it was stored. Must not throw for an unreachable store (false instead).
template <class R>
concept RemoteWriter = requires(R& r, std::string_view key, std::string_view name, std::string_view value) {
  { r.put(key, name, value) } -> std::same_as<bool>;
};

/// What the remote cache should trust and do: the shared secret entries are signed with (empty =
/// unsigned), and whether this client only reads.
template <class R>
concept RemoteTrustPolicy = requires(const R& r) {
  { r.secret() } -> std::convertible_to<std::string>;
  { r.read_only() } -> std::same_as<bool>;
};

/// A remote store of cache entries (Redis through `cotune::redis::redis_backend`, or your own).
template <class R>
concept RemoteBackend = RemoteReader<R> && RemoteWriter<R> && RemoteTrustPolicy<R>;

/// A backend with one process-wide instance, so a cache manager can be built from a key alone.
template <class R>
concept SharedRemoteBackend = RemoteBackend<R> && requires {
  { R::shared() } -> std::same_as<R&>;
};

/// Optional: the backend counts entries the remote cache refused (bad envelope or signature), so
/// that one counter tells every reason an entry was not used.
template <class R>
concept RemoteRefusalCounter = requires(R& r) { r.count_refused(); };

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/remote_backend.ipp>
#endif
