#pragma once
/// \file One pass over a file-cache root: reclaims orphaned temporary files and evicts the least
/// recently used entries beyond a size limit. Run by writers (file_cache::put, now and then) and by
/// `cotune cache gc` (cache_inventory::gc).
///
/// - Recency is an entry's mtime: a write sets it, and a read refreshes it when it is over an hour
///   old (file_cache::touch_after), so eviction takes the entries least recently used first.
/// - An entry a live process has loaded is never evicted: such a process holds a shared flock on it
///   (file_cache::pin), and eviction takes an exclusive one without waiting, skipping the entry when
///   it cannot. The kernel drops the lock when the process dies, kill -9 included.
/// - A temporary file is reclaimed when its writer's exclusive lock is gone and either its writer is
///   known dead (same host, no process with its id and start time) or it is old enough (writers on
///   other hosts). The bytes of the temporary files left (writes in progress) count against the limit.
/// - Only key directories (52 base32 characters) are entered, and nothing is followed: what is not
///   cotune's is left alone.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/detail/config.hpp>

namespace cotune::detail {

struct sweep_options {
  std::uintmax_t max_bytes = 0;       ///< evict beyond this many bytes of entries; 0 = no limit
  std::chrono::seconds tmp_max_age{}; ///< reclaim temporary files at least this old (and unlocked)
  bool remove_empty_dirs = false;     ///< remove key directories left empty (and older than tmp_max_age)
  /// Under the ledger's lock (cache/cache_ledger.hpp), where a put makes its key directory and its
  /// temporary file: remove every key directory found empty or emptied by an eviction, whatever its
  /// age. Each is a block on disk (4 KiB on ext4): thousands of empty ones held a 4 MiB cache at 4x its
  /// limit by `du`.
  bool remove_emptied_dirs = false;
};

struct sweep_report {
  std::size_t temporaries_removed = 0;
  std::uintmax_t temporary_bytes = 0;
  std::uintmax_t temporary_bytes_left = 0; ///< bytes of the temporary files left in place (writes in progress)
  std::size_t evicted = 0;
  std::uintmax_t evicted_bytes = 0;
  std::size_t pinned = 0;          ///< entries beyond the limit that were kept because a live process holds them
  std::size_t dirs_removed = 0;
  std::uintmax_t bytes_before = 0; ///< bytes of entries before the pass (temporaries not counted)
  std::uintmax_t bytes_after = 0;
  std::vector<std::string> skipped; ///< directories left alone, and why (untrusted, unreadable)
};

/// The names in an open directory (the descriptor is duplicated: `dir` stays usable).
[[nodiscard]] COTUNE_DECL std::vector<std::string> names_in(int dir);

/// True for a key directory's name: base32 of a 32-byte digest.
[[nodiscard]] COTUNE_DECL bool is_key_dir_name(std::string_view name);

/// Removes the entry `name` in `dir` unless a live process holds it; true if removed.
COTUNE_DECL bool evict_entry(int dir, const std::string& name, bool& pinned);

/// One pass over the cache root open as `root` (at `root_path`); see the file comment. Evicts until
/// entries and the temporary files left together take at most `max_bytes`. The caller holds the
/// cache's ledger (cache/cache_ledger.hpp), so that no put commits while the pass counts.
COTUNE_DECL sweep_report sweep_cache(int root, const std::filesystem::path& root_path, const sweep_options& opts);

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/cache/cache_sweep.ipp>
#endif
