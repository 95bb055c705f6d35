#pragma once
/// \file `cotune::file_cache`: the on-disk cache manager (spec §6.2, hardened), and `entry_pin`.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune {

namespace detail {
class cache_ledger;
} // namespace detail

/// Which directory a file cache works in.
enum class cache_mode {
  normal,   ///< `cache.dir`: framed, verified entries
  dump,     ///< `cache.dump_dir`: plain files for people to read
  override_ ///< `cache.override_dir`: plain files a user put there; read-only
};

/// Throws cache_error unless `name` is a plain file name: non-empty, at most 255 bytes, no '/', no
/// NUL, not "." or "..", no "..", and not starting with ".tmp." (reserved for writes in progress).
COTUNE_DECL void validate_cache_file_name(std::string_view name);

/// A verified entry held for as long as this handle lives: a shared flock on the entry's file, so
/// that eviction (by any process, `cotune cache gc` included) never removes it. Take one for an
/// entry whose content a process keeps using (a dlopen'ed shared object, a loaded module) and keep
/// it beside what was loaded. Move-only.
class entry_pin {
public:
  entry_pin(entry_pin&&) noexcept = default;
  entry_pin& operator=(entry_pin&&) noexcept = default;

  /// Where the entry is.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// A name for exactly the file that was verified ("/proc/self/fd/N"), whatever was renamed onto
  /// `path()` since: dlopen it to load the checked bytes and nothing else.
  [[nodiscard]] std::string fd_path() const { return fmt::format("/proc/self/fd/{}", fd_.get()); }

private:
  friend class file_cache;
  entry_pin(detail::unique_fd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  detail::unique_fd fd_;
  std::filesystem::path path_;
};

/// Files under one key in `<root>/<base32(key)>/`. Normal entries are framed (cache/entry_frame.hpp:
/// format version, checksum bound to key and name, and a MAC under the local key when one is set) and
/// verified on every read: a damaged, foreign or unsigned entry is a miss, and the next `put` replaces it.
///
/// Trust: the root and the key directory are checked on every open (cache/cache_trust.hpp; the root's
/// verdict is cached per process): a directory owned by another user, or writable by group or others,
/// makes every call throw cache_error saying why and how to fix it, and nothing is read from it. Every
/// open below the root is an `openat` with O_NOFOLLOW: a link planted in the cache is a miss, never
/// followed, and a `put` replaces the link itself. A file not owned by this user (or root), or writable
/// by others, is a miss.
///
/// Writes are a locked temporary file plus an atomic rename, accounted in the cache's ledger
/// (cache/cache_ledger.hpp): each `put` reclaims the temporary files of writers that died (at once on
/// this host, after cache.tmp_max_age_s for other hosts') and, when cache.max_bytes is set, evicts the
/// least recently used unpinned entries before its own entry could take the cache past the limit, so
/// that concurrent writers never cross it. Lookups never create directories.
class file_cache {
public:
  /// A read refreshes an entry's mtime (its recency for eviction) when it is older than this: at most
  /// one metadata write per entry per hour, and entries used within the same hour are equally recent.
  static constexpr std::chrono::seconds touch_after{3600};

  /// `hex_key`: a lower-case hex digest (typically SHA-256), under the directory the mode's knob names.
  explicit file_cache(std::string_view hex_key, cache_mode mode = cache_mode::normal)
      : file_cache(root_for(mode), hex_key, mode) {}

  /// Files under `hex_key` in the cache rooted at `root` (for tools that examine a given directory).
  COTUNE_DECL file_cache(const std::filesystem::path& root, std::string_view hex_key,
                         cache_mode mode = cache_mode::normal);

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] cache_mode mode() const noexcept { return mode_; }

  /// Path of a verified entry, or nothing (absent, damaged or foreign).
  [[nodiscard]] COTUNE_DECL std::optional<std::filesystem::path> get_file(std::string_view name) const;

  /// Content of a verified entry, or nothing.
  [[nodiscard]] COTUNE_DECL std::optional<std::string> get(std::string_view name) const;

  /// A verified entry, held against eviction while the handle lives (see entry_pin), or nothing.
  [[nodiscard]] COTUNE_DECL std::optional<entry_pin> pin(std::string_view name) const;

  /// Stores `data` as `name` (replacing any entry) and returns its path.
  COTUNE_DECL std::filesystem::path put(std::string_view data, std::string_view name);

  /// The children of group `name` that are present and valid, or nothing if there is no such group.
  [[nodiscard]] COTUNE_DECL std::optional<cache_group> get_group(std::string_view name) const;

  /// Records a group of children (stored by name, relative to this key's directory).
  COTUNE_DECL std::filesystem::path put_group(std::string_view name, const cache_group& children);

private:
  /// `put` past its checks; file-system failures come out as std::system_error.
  COTUNE_DECL std::filesystem::path store(std::string_view data, std::string_view name);

  static COTUNE_DECL std::filesystem::path root_for(cache_mode mode);

  struct found; // file_cache.ipp

  /// The entry `name`, opened below the checked root and key directory without following links,
  /// read and (for normal entries) verified; with `lock`, held under a shared flock.
  [[nodiscard]] COTUNE_DECL std::optional<found> find(std::string_view name, bool lock) const;

  /// Removes this key directory's temporary files whose writers are gone (cache.tmp_max_age_s).
  static COTUNE_DECL void reclaim_temporaries(int dir);

  /// Under the ledger's lock: reclaims dead writers' temporary files and, with cache.max_bytes set,
  /// makes room for `bytes` more (cache/cache_ledger.hpp says when it walks and how far it evicts).
  COTUNE_DECL void make_room(int root, detail::cache_ledger& ledger, std::uint64_t bytes) const;

  /// Takes the write of `temporary` in key directory `dir` off the ledger's list of writes in flight.
  static COTUNE_DECL void forget(detail::cache_ledger& ledger, const std::string& dir, const std::string& temporary);

  static COTUNE_DECL std::string group_file_name(std::string_view name);

  cache_mode mode_;
  std::string key_;
  std::filesystem::path root_;
  std::string dir_name_;
  std::filesystem::path dir_;
};

static_assert(CacheManager<file_cache>);
static_assert(PinnableCache<file_cache>);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/file_cache.ipp>
#endif
