#pragma once
/// \file `cotune::file_cache`: the on-disk cache manager (spec §6.2, hardened).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/detail/entry_frame.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

/// Which directory a file cache works in.
enum class cache_mode {
  normal,   ///< `cache.dir`: framed, verified entries
  dump,     ///< `cache.dump_dir`: plain files for people to read
  override_ ///< `cache.override_dir`: plain files a user put there; read-only
};

/// Throws cache_error unless `name` is a plain file name: non-empty, at most 255 bytes, no '/', no
/// NUL, not "." or "..", no "..", and not starting with ".tmp." (reserved for writes in progress).
inline void validate_cache_file_name(std::string_view name) {
  const bool bad = name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos ||
                   name.find('\0') != std::string_view::npos || name.find("..") != std::string_view::npos ||
                   name == "." || name.starts_with(".tmp.");
  if (bad) {
    std::string shown;
    for (char c : name) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    throw cache_error(fmt::format("cache file name '{}' is refused: a name must be a plain file name (no '/', "
                                  "'..' or NUL, not empty, not starting with '.tmp.', at most 255 bytes)",
                                  shown));
  }
}

/// Files under one key in `<dir>/<base32(key)>/`. Normal entries are framed (format version + checksum)
/// and verified on every read: a damaged entry is a miss, and the next `put` replaces it. Writes are a
/// temporary file plus an atomic rename; lookups never create directories.
class file_cache {
public:
  /// `hex_key`: a lower-case hex digest (typically SHA-256), under the directory the mode's knob names.
  explicit file_cache(std::string_view hex_key, cache_mode mode = cache_mode::normal)
      : file_cache(root_for(mode), hex_key, mode) {}

  /// Files under `hex_key` in the cache rooted at `root` (for tools that examine a given directory).
  file_cache(const std::filesystem::path& root, std::string_view hex_key, cache_mode mode = cache_mode::normal)
      : mode_(mode) {
    if (!detail::is_hex(hex_key))
      throw cache_error(fmt::format("cache key '{}' is not a lower-case hex digest", hex_key));
    if (root.empty())
      throw cache_error("the cache directory is empty; set COTUNE_CACHE_DIR (or cotune::knobs().cache.dir)");
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex_key.size(); i += 2)
      bytes.push_back(static_cast<char>(std::stoi(std::string(hex_key.substr(i, 2)), nullptr, 16)));
    dir_ = root / detail::base32(bytes);
  }

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] cache_mode mode() const noexcept { return mode_; }

  /// Path of a verified entry, or nothing (absent, damaged or foreign).
  [[nodiscard]] std::optional<std::filesystem::path> get_file(std::string_view name) const {
    validate_cache_file_name(name);
    auto path = dir_ / std::string(name);
    if (mode_ != cache_mode::normal) {
      std::error_code ec;
      return std::filesystem::is_regular_file(path, ec) ? std::optional(path) : std::nullopt;
    }
    return get(name) ? std::optional(path) : std::nullopt;
  }

  /// Content of a verified entry, or nothing.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    validate_cache_file_name(name);
    auto file = detail::read_file(dir_ / std::string(name));
    if (!file) return std::nullopt;
    if (mode_ != cache_mode::normal) return file;
    auto payload = detail::unframe(binding(name), *file);
    if (!payload) return std::nullopt;
    return std::string(*payload);
  }

  /// Stores `data` as `name` (replacing any entry) and returns its path.
  std::filesystem::path put(std::string_view data, std::string_view name) {
    validate_cache_file_name(name);
    if (mode_ == cache_mode::override_)
      throw cache_error(fmt::format("the override cache '{}' is read-only; cannot put '{}'", dir_.string(), name));
    detail::make_private_dirs(dir_);
    auto path = dir_ / std::string(name);
    if (mode_ == cache_mode::normal) detail::atomic_write(path, data, detail::make_frame(binding(name), data));
    else detail::atomic_write(path, data);
    return path;
  }

  /// The children of group `name` that are present and valid, or nothing if there is no such group.
  [[nodiscard]] std::optional<cache_group> get_group(std::string_view name) const {
    auto text = get(group_file_name(name));
    if (!text) return std::nullopt;
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    simdjson::dom::array children;
    if (parser.parse(*text).get(root) != simdjson::SUCCESS || root["children"].get_array().get(children) != simdjson::SUCCESS)
      return std::nullopt; // a corrupt group is a miss (Triton 3.5 raises)
    cache_group group;
    for (auto child : children) {
      std::string_view child_name;
      if (child.get_string().get(child_name) != simdjson::SUCCESS) return std::nullopt;
      try {
        if (auto path = get_file(child_name)) group.emplace(std::string(child_name), *path);
      } catch (const cache_error&) {
        return std::nullopt; // a group naming an invalid file is foreign
      }
    }
    return group;
  }

  /// Records a group of children (stored by name, relative to this key's directory).
  std::filesystem::path put_group(std::string_view name, const cache_group& children) {
    json_writer w;
    w.begin_object().key("children").begin_array();
    for (const auto& [child, path] : children) {
      validate_cache_file_name(child);
      w.value(child);
    }
    return put(std::move(w.end_array().end_object()).take(), group_file_name(name));
  }

private:
  static std::filesystem::path root_for(cache_mode mode) {
    return mode == cache_mode::dump        ? knobs().cache.dump_dir.get()
           : mode == cache_mode::override_ ? knobs().cache.override_dir.get()
                                           : knobs().cache.dir.get();
  }

  /// What this cache's entry `name` is framed with: its key directory and its name.
  [[nodiscard]] std::string binding(std::string_view name) const {
    return detail::entry_binding(dir_.filename().string(), name);
  }

  static std::string group_file_name(std::string_view name) {
    validate_cache_file_name(name);
    return "__grp__" + std::string(name) + ".json";
  }

  cache_mode mode_;
  std::filesystem::path dir_;
};

static_assert(CacheManager<file_cache>);

} // namespace cotune
