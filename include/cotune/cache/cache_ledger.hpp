#pragma once
/// \file `cotune::detail::cache_ledger`: the file cache's shared account of its size, kept so that
/// `cache.max_bytes` is a limit that concurrent writers never cross, not a target a sweep returns to.
///
/// Why a ledger: eviction by a walk after the fact lets every writer overshoot between walks (8
/// processes took a 4 MiB cache to 5.5 MiB), and a walk before every put costs a readdir of the whole
/// cache. The ledger (`<root>/.cotune-ledger`, a few lines of text) holds the bytes of every regular
/// file in the key directories, entries and temporary files alike, and the writes in flight; it is
/// read and rewritten only under an exclusive flock on it, so writers take turns for a few
/// microseconds per put:
///
/// 1. under the lock, a writer reclaims the temporary files of dead writers listed as in flight, makes
///    room (when the total plus its entry would exceed the limit, one walk of the cache re-counts it
///    and evicts the least recently used unpinned entries down to a tenth below the limit), creates
///    its temporary file at its final size (`temp_file_writer::reserve`) and records it;
/// 2. it writes the data without the lock;
/// 3. under the lock again, it renames the file into place and takes the replaced entry's bytes off.
///
/// So the bytes on disk never exceed the ledger, and the ledger never exceeds the limit, except when
/// pinned entries (held by live processes) or one entry larger than the limit leave no room: a put
/// never fails or waits for room. The ledger errs only high (a writer killed between steps leaves
/// bytes counted that a walk later takes off); files added behind cotune's back are found by the
/// walk made after every `max_bytes` written. A torn or missing ledger is rebuilt by a walk.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail {

/// A test's hook: when set, `file_cache::put` calls it with the temporary file's path after writing
/// the first half of the entry, outside the ledger's lock (a test pauses or kills the writer there).
inline void (*put_midway_hook)(const std::string& temporary_path) = nullptr;

/// The ledger of the cache root open as `root`, locked (exclusively) while this object lives.
class cache_ledger {
public:
  static constexpr const char* file_name = ".cotune-ledger";

  /// A write in flight: the temporary file `temporary` in key directory `dir`, reserved at `bytes`.
  struct in_flight {
    std::string dir, temporary;
    std::uint64_t bytes = 0;
  };

  /// Opens (creating it 0600; read-only on a read-only file system) and locks the ledger; blocks while
  /// another process holds it. Throws
  /// std::system_error naming `root_shown` (the root's path) when it cannot be opened or locked.
  COTUNE_DECL cache_ledger(int root, const std::filesystem::path& root_shown);
  /// Unlocks explicitly: a process forked meanwhile (a fork server, an isolation worker) shares the
  /// open file, and closing this process's descriptor alone would leave the lock held by the child.
  COTUNE_DECL ~cache_ledger();
  cache_ledger(const cache_ledger&) = delete;
  cache_ledger& operator=(const cache_ledger&) = delete;

  /// Bytes of every regular file in the key directories, or nothing until a walk has counted them.
  std::optional<std::uint64_t> bytes;
  /// Bytes written since the last walk.
  std::uint64_t written = 0;
  /// Writes in progress (or left by writers that died).
  std::vector<in_flight> writes;

  /// Adds (or takes off, with a negative `delta`) bytes, when the total is known; never below zero.
  COTUNE_DECL void add(std::int64_t delta) noexcept;

  /// Removes the listed temporary files whose writers are gone (detail::temporary_writer_gone), and
  /// forgets those that are no longer there (reclaimed by a walk or by hand), taking their bytes off.
  COTUNE_DECL void reclaim_dead_writes(int root);

  /// Writes the ledger back (still locked). A failure is ignored: the next holder finds a stale or
  /// torn ledger, and a torn one is rebuilt by a walk.
  COTUNE_DECL void save() noexcept;

private:
  unique_fd fd_;
  bool read_only_ = false;
};

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/cache/cache_ledger.ipp>
#endif
