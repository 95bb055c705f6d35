#pragma once
/// \file `cotune::cache_inventory`: what a file-cache directory holds, checked the way readers check
/// it, and the operations on the whole directory (list, verify, clear, gc, read one entry). The
/// `cotune cache` commands are a thin layer over it.
///
///     cotune::cache_inventory inv{"/home/me/.cache/cotune"};
///     for (const auto& f : inv.files())
///       if (f.status == cotune::cache_file_status::corrupt) std::puts(f.path.c_str());

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

#include <fmt/format.h>

#include <cotune/cache/cache_trust.hpp>
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

/// What `gc` does: reclaim temporary files at least `tmp_max_age` old whose writers are gone, and
/// evict entries beyond `max_bytes`, least recently used first.
struct cache_gc_options {
  std::uintmax_t max_bytes = 0; ///< 0 = no limit: only temporary files and empty key directories go
  std::chrono::seconds tmp_max_age{600};
  /// The cache.max_bytes and cache.tmp_max_age_s knobs.
  [[nodiscard]] static cache_gc_options from_knobs() {
    return {static_cast<std::uintmax_t>(knobs().cache.max_bytes.get()),
            std::chrono::seconds(knobs().cache.tmp_max_age_s.get())};
  }
};

/// What `gc` did.
struct cache_gc_report {
  std::size_t temporaries_removed = 0;
  std::uintmax_t temporary_bytes = 0;
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
  [[nodiscard]] bool exists() const {
    std::error_code ec;
    if (std::filesystem::is_directory(root_, ec)) return true;
    if (std::filesystem::exists(root_, ec))
      throw cache_error(fmt::format("'{}' is not a directory; pass the cache directory (COTUNE_CACHE_DIR)",
                                    root_.string()));
    return false;
  }

  /// The hex key a key directory stands for (52 base32 characters = a SHA-256), or nothing.
  [[nodiscard]] static std::optional<std::string> key_of_dir(std::string_view name) {
    if (name.size() != 52) return std::nullopt;
    auto bytes = detail::base32_decode(name);
    if (!bytes || bytes->size() != 32) return std::nullopt;
    return detail::to_hex(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
  }

  /// Every file, in name order, checked the way readers check them (empty if the directory does not
  /// exist). Symbolic links are reported, never followed. `describe` annotates valid entries. Entries
  /// are checked with the local cache key when one is configured (cache/local_key.hpp).
  [[nodiscard]] std::vector<cache_file> files(const entry_describer& describe = {}) const {
    std::vector<cache_file> out;
    if (!exists()) return out;
    namespace fs = std::filesystem;
    const auto root_fd = detail::open_dir(root_);
    const std::string secret = local_cache_key();
    for (const auto& top : sorted_entries(root_)) {
      const auto top_name = top.path().filename().string();
      const auto top_status = top.symlink_status();
      if (!fs::is_directory(top_status)) {
        out.push_back({"", top_name, top.path(), fs::is_regular_file(top_status) ? top.file_size() : 0,
                       cache_file_status::foreign, "not in a key directory"});
        continue;
      }
      const auto key = key_of_dir(top_name);
      const auto dir_fd = detail::open_dir_at(root_fd.get(), top_name);
      for (const auto& e : sorted_entries(top.path())) {
        cache_file f{top_name, e.path().filename().string(), e.path(), 0, cache_file_status::foreign, {}};
        const auto st = e.symlink_status();
        if (fs::is_regular_file(st)) f.bytes = e.file_size();
        if (!key) {
          f.note = "the directory's name is not a cache key";
        } else if (!fs::is_regular_file(st)) {
          f.note = fs::is_symlink(st) ? "a symbolic link" : fs::is_directory(st) ? "a directory" : "not a regular file";
        } else if (detail::is_temporary_name(f.file)) {
          f.status = cache_file_status::temporary;
        } else {
          check_entry(dir_fd.get(), *key, secret, f, describe);
        }
        out.push_back(std::move(f));
      }
    }
    return out;
  }

  /// The verdict on the directory itself (cache/cache_trust.hpp): readers refuse an untrusted one.
  [[nodiscard]] cache_dir_trust trust() const { return check_cache_dir(root_); }

  /// Reclaims orphaned temporary files and, with a limit, evicts the least recently used entries that
  /// no live process holds (cache/cache_sweep.hpp); removes key directories left empty. Throws
  /// cache_error for an untrusted directory (nothing is removed from it).
  [[nodiscard]] cache_gc_report gc(const cache_gc_options& opts = cache_gc_options::from_knobs()) const {
    cache_gc_report r;
    if (!exists()) return r;
    const auto root_fd = detail::open_trusted_root(root_);
    if (!root_fd)
      throw cache_error(fmt::format("cannot open the cache directory '{}': {}", root_.string(), std::strerror(errno)));
    const auto s = detail::sweep_cache(root_fd.get(), root_, {opts.max_bytes, opts.tmp_max_age, true});
    r.temporaries_removed = s.temporaries_removed;
    r.temporary_bytes = s.temporary_bytes;
    r.evicted = s.evicted;
    r.evicted_bytes = s.evicted_bytes;
    r.pinned = s.pinned;
    r.dirs_removed = s.dirs_removed;
    r.bytes_before = s.bytes_before;
    r.bytes_after = s.bytes_after;
    r.skipped = s.skipped;
    return r;
  }

  /// Counts of `files()`.
  [[nodiscard]] static cache_totals totals(const std::vector<cache_file>& files) {
    cache_totals t;
    std::string last_key;
    for (const auto& f : files) {
      if (!f.key_dir.empty() && f.key_dir != last_key && key_of_dir(f.key_dir)) ++t.keys;
      last_key = f.key_dir;
      t.bytes += f.bytes;
      switch (f.status) {
      case cache_file_status::valid: ++t.valid; break;
      case cache_file_status::corrupt: ++t.corrupt; break;
      case cache_file_status::temporary: ++t.temporary; break;
      case cache_file_status::foreign: ++t.foreign; break;
      }
    }
    return t;
  }

  /// What `clear` removes: only key directories, so that a cache directory pointed at the wrong place
  /// ($HOME, a project) loses nothing cotune did not write.
  [[nodiscard]] cache_clear_plan plan_clear() const {
    cache_clear_plan plan;
    if (!exists()) return plan;
    namespace fs = std::filesystem;
    for (const auto& e : sorted_entries(root_)) {
      if (fs::is_directory(e.symlink_status()) && key_of_dir(e.path().filename().string())) {
        plan.key_dirs.push_back(e.path());
        for (const auto& f : fs::recursive_directory_iterator(e.path()))
          if (fs::is_regular_file(f.symlink_status())) plan.bytes += f.file_size();
      } else {
        ++plan.left_alone;
      }
    }
    return plan;
  }

  /// Removes the key directories of `plan` (as made by `plan_clear`).
  void clear(const cache_clear_plan& plan) const {
    for (const auto& dir : plan.key_dirs) {
      if (dir.parent_path() != root_ || !key_of_dir(dir.filename().string()))
        throw cache_error(fmt::format("'{}' is not a key directory of the cache '{}'; not removed", dir.string(),
                                      root_.string()));
      std::filesystem::remove_all(dir);
    }
  }

  /// Reads one entry: a framed entry where the cache keeps it (its frame binds it to its file name and
  /// its key directory's key), or a plain file. Throws cache_error saying what is wrong.
  [[nodiscard]] static stored_entry read_entry(const std::filesystem::path& file) {
    auto text = detail::read_file(file);
    if (!text)
      throw cache_error(fmt::format("cannot read '{}': it does not exist or is not a regular file", file.string()));
    const auto key = key_of_dir(std::filesystem::absolute(file).parent_path().filename().string());
    const auto checked = key ? detail::unframe(*key, file.filename().string(), *text, local_cache_key())
                             : detail::unframed{};
    if (checked) return {std::string(checked.payload), true};
    if (std::string_view(*text).ends_with(detail::frame_tail))
      throw cache_error(fmt::format("'{}' is a damaged, renamed or moved cache entry ({}: an entry is bound to its "
                                    "file name and its key's directory, so show it where the cache keeps it); the "
                                    "tuning result cannot be trusted",
                                    file.string(), fault_note(checked.fault)));
    return {std::move(*text), false};
  }

private:
  [[nodiscard]] static std::string fault_note(entry_fault f) {
    switch (f) {
    case entry_fault::unsigned_entry:
      return "unsigned: a reader holding the local cache key (COTUNE_CACHE_KEY, COTUNE_CACHE_KEY_FILE) refuses it";
    case entry_fault::bad_signature: return "signed with another local cache key";
    case entry_fault::bad_version: return "written by another cache format";
    default: return "the frame does not check out (damaged, truncated, renamed, or copied from another key)";
    }
  }

  /// Reads and checks the regular file `f` of key directory `dir` (open, or invalid) as readers do.
  static void check_entry(int dir, const std::string& key, const std::string& secret, cache_file& f,
                          const entry_describer& describe) {
    auto opened = detail::open_file_at(dir, f.file);
    if (opened && !detail::trusted_file(opened->st)) {
      f.note = fmt::format("owned by {} or writable by others (mode {:04o}): readers ignore it",
                           detail::user_text(opened->st.st_uid), opened->st.st_mode & 07777);
      return;
    }
    auto content = opened ? detail::read_all(opened->fd.get()) : std::nullopt;
    const auto checked = content ? detail::unframe(key, f.file, *content, secret) : detail::unframed{};
    f.status = checked ? cache_file_status::valid : cache_file_status::corrupt;
    if (!checked) f.note = fault_note(checked.fault);
    else if (describe) f.note = describe(f, checked.payload);
  }

  static std::vector<std::filesystem::directory_entry> sorted_entries(const std::filesystem::path& dir) {
    std::vector<std::filesystem::directory_entry> entries;
    for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e);
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    return entries;
  }

  std::filesystem::path root_;
};

} // namespace cotune
