#pragma once
/// \file `cotune::cache_inventory`: what a file-cache directory holds, checked the way readers check
/// it, and the operations on the whole directory (list, verify, clear, read one entry). The
/// `cotune cache` commands are a thin layer over it.
///
///     cotune::cache_inventory inv{"/home/me/.cache/cotune"};
///     for (const auto& f : inv.files())
///       if (f.status == cotune::cache_file_status::corrupt) std::puts(f.path.c_str());

#include <algorithm>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include <cotune/cache/file_cache.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/entry_frame.hpp>
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
  /// exist). Symbolic links are reported, never followed. `describe` annotates valid entries.
  [[nodiscard]] std::vector<cache_file> files(const entry_describer& describe = {}) const {
    std::vector<cache_file> out;
    if (!exists()) return out;
    namespace fs = std::filesystem;
    for (const auto& top : sorted_entries(root_)) {
      const auto top_name = top.path().filename().string();
      const auto top_status = top.symlink_status();
      if (!fs::is_directory(top_status)) {
        out.push_back({"", top_name, top.path(), fs::is_regular_file(top_status) ? top.file_size() : 0,
                       cache_file_status::foreign, "not in a key directory"});
        continue;
      }
      const auto key = key_of_dir(top_name);
      std::optional<file_cache> cache;
      if (key) cache.emplace(root_, *key);
      for (const auto& e : sorted_entries(top.path())) {
        cache_file f{top_name, e.path().filename().string(), e.path(), 0, cache_file_status::foreign, {}};
        const auto st = e.symlink_status();
        if (fs::is_regular_file(st)) f.bytes = e.file_size();
        if (!cache) {
          f.note = "the directory's name is not a cache key";
        } else if (!fs::is_regular_file(st)) {
          f.note = fs::is_symlink(st) ? "a symbolic link" : fs::is_directory(st) ? "a directory" : "not a regular file";
        } else if (f.file.starts_with(".tmp.")) {
          f.status = cache_file_status::temporary;
        } else {
          std::optional<std::string> payload;
          try {
            payload = cache->get(f.file);
          } catch (const cache_error&) {
            // A name that file_cache refuses was not written by it.
          }
          f.status = payload ? cache_file_status::valid : cache_file_status::corrupt;
          if (!payload) f.note = "the frame does not check out (damaged, truncated, renamed, or copied from another key)";
          else if (describe) f.note = describe(f, *payload);
        }
        out.push_back(std::move(f));
      }
    }
    return out;
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
  /// key directory), or a plain file. Throws cache_error saying what is wrong.
  [[nodiscard]] static stored_entry read_entry(const std::filesystem::path& file) {
    auto text = detail::read_file(file);
    if (!text)
      throw cache_error(fmt::format("cannot read '{}': it does not exist or is not a regular file", file.string()));
    std::string payload = *text;
    bool verified = false;
    const auto binding = detail::entry_binding(std::filesystem::absolute(file).parent_path().filename().string(),
                                               file.filename().string());
    if (auto framed = detail::unframe(binding, *text)) {
      payload = std::string(*framed);
      verified = true;
    } else if (std::string_view(*text).ends_with(detail::frame_tail)) {
      throw cache_error(fmt::format("'{}' is a damaged, renamed or moved cache entry (its frame does not check out; an "
                                    "entry is bound to its file name and its key's directory, so show it where the "
                                    "cache keeps it); the tuning result cannot be trusted",
                                    file.string()));
    }
    return {std::move(payload), verified};
  }

private:
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
