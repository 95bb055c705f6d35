#pragma once
/// \file `cotune::cache_inventory`: what a file-cache directory holds, checked the way readers check
/// it, and the operations on the whole directory (list, verify, clear, gc, read one entry). The
/// `cotune cache` commands are a thin layer over it.
///
///     cotune::cache_inventory inv{"/home/me/.cache/cotune"};
///     for (const auto& f : inv.files())
///       if (f.status == cotune::cache_file_status::corrupt) std::puts(f.path.c_str());

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <cotune/cache/cache_trust.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/cache/entry_fault.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/cache/local_key.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cache/cache_sweep.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/cache/entry_frame.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune {

/// What one file under the cache directory is.
enum class cache_file_status {
  valid,     ///< a framed entry that checks out
  corrupt,   ///< named like an entry, but damaged, truncated, foreign or renamed: a miss for readers
  temporary, ///< ".tmp.*": a write in progress, or left behind by a process that died mid-write
  foreign    ///< not cotune's: outside a key directory, not a regular file, or in a directory not named as a key
};

[[nodiscard]] constexpr std::string_view to_string(cache_file_status s) noexcept {
  switch (s) {
  case cache_file_status::valid: return "valid";
  case cache_file_status::corrupt: return "corrupt";
  case cache_file_status::temporary: return "temporary";
  case cache_file_status::foreign: return "foreign";
  }
  return "?";
}

/// One file under the cache directory.
struct cache_file {
  std::string key_dir; ///< the key directory's name (base32 of the key), empty at the top level
  std::string file;    ///< the file's name
  std::filesystem::path path;
  std::uintmax_t bytes = 0;
  cache_file_status status = cache_file_status::foreign;
  std::string note{}; ///< why a file is foreign or corrupt, or what a `describe` function said of a valid one
};

/// How many of each kind of file a directory holds.
struct cache_totals {
  std::size_t keys = 0, valid = 0, corrupt = 0, temporary = 0, foreign = 0;
  std::uintmax_t bytes = 0;
};

/// What `clear` would remove: the key directories only (anything else is left alone).
struct cache_clear_plan {
  std::vector<std::filesystem::path> key_dirs;
  std::uintmax_t bytes = 0;
  std::size_t left_alone = 0; ///< top-level files and directories that are not cotune's
};

/// What `gc` does: reclaim the temporary files of writers that are gone (at once for this host's
/// writers, at least `tmp_max_age` old for other hosts'), and evict entries beyond `max_bytes`
/// (writes in progress counted), least recently used first.
struct cache_gc_options {
  std::uintmax_t max_bytes = 0; ///< 0 = no limit: only temporary files and empty key directories go
  std::chrono::seconds tmp_max_age{600};
  /// The cache.max_bytes and cache.tmp_max_age_s knobs.
  [[nodiscard]] COTUNE_DECL static cache_gc_options from_knobs();
};

/// What `gc` did.
struct cache_gc_report {
  std::size_t temporaries_removed = 0;
  std::uintmax_t temporary_bytes = 0;
  std::uintmax_t temporary_bytes_left = 0; ///< temporary files left in place: writes in progress
  std::size_t evicted = 0;
  std::uintmax_t evicted_bytes = 0;
  std::size_t pinned = 0; ///< entries beyond the limit kept because a live process holds them
  std::size_t dirs_removed = 0;
  std::uintmax_t bytes_before = 0, bytes_after = 0; ///< bytes of entries (temporary files not counted)
  std::vector<std::string> skipped{}; ///< key directories left alone, and why
};

/// One entry's content read for people: from a framed cache entry (verified against its place in the
/// cache) or from a plain file (the dump directory, a copy someone made).
struct stored_entry {
  std::string payload;
  bool verified_entry = false; ///< a framed entry that checked out (else a plain file)
};

/// Says something of a valid entry for listings (e.g. a tuning result's kernel and winner), or "".
using entry_describer = std::function<std::string(const cache_file&, std::string_view payload)>;

/// The contents of one file-cache directory.
class cache_inventory {
public:
  explicit cache_inventory(std::filesystem::path root) : root_(std::move(root)) {}

  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }

  /// True when the directory exists; throws cache_error when the path is something else.
  [[nodiscard]] COTUNE_DECL bool exists() const;

  /// The hex key a key directory stands for (52 base32 characters = a SHA-256), or nothing.
  [[nodiscard]] COTUNE_DECL static std::optional<std::string> key_of_dir(std::string_view name);

  /// Every file, in name order, checked the way readers check them (empty if the directory does not
  /// exist). Symbolic links are reported, never followed. `describe` annotates valid entries. Entries
  /// are checked with the local cache key when one is configured (cache/local_key.hpp).
  [[nodiscard]] COTUNE_DECL std::vector<cache_file> files(const entry_describer& describe = {}) const;

  /// The verdict on the directory itself (cache/cache_trust.hpp): readers refuse an untrusted one.
  [[nodiscard]] cache_dir_trust trust() const { return check_cache_dir(root_); }

  /// Reclaims orphaned temporary files and, with a limit, evicts the least recently used entries that
  /// no live process holds (cache/cache_sweep.hpp); removes key directories left empty. Throws
  /// cache_error for an untrusted directory (nothing is removed from it).
  [[nodiscard]] COTUNE_DECL cache_gc_report gc(const cache_gc_options& opts = cache_gc_options::from_knobs()) const;

  /// Counts of `files()`.
  [[nodiscard]] COTUNE_DECL static cache_totals totals(const std::vector<cache_file>& files);

  /// What `clear` removes: only key directories, so that a cache directory pointed at the wrong place
  /// ($HOME, a project) loses nothing cotune did not write.
  [[nodiscard]] COTUNE_DECL cache_clear_plan plan_clear() const;

  /// Removes the key directories of `plan` (as made by `plan_clear`).
  COTUNE_DECL void clear(const cache_clear_plan& plan) const;

  /// Reads one entry: a framed entry where the cache keeps it (its frame binds it to its file name and
  /// its key directory's key), or a plain file. Throws cache_error saying what is wrong.
  [[nodiscard]] COTUNE_DECL static stored_entry read_entry(const std::filesystem::path& file);

private:
  [[nodiscard]] COTUNE_DECL static std::string fault_note(entry_fault f);

  /// Reads and checks the regular file `f` of key directory `dir` (open, or invalid) as readers do.
  COTUNE_DECL static void check_entry(int dir, const std::string& key, const std::string& secret, cache_file& f,
                                      const entry_describer& describe);

  COTUNE_DECL static std::vector<std::filesystem::directory_entry> sorted_entries(const std::filesystem::path& dir);

  std::filesystem::path root_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/cache_inventory.ipp>
#endif
