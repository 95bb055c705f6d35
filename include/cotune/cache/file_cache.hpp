#pragma once
/// \file `cotune::file_cache`: the on-disk cache manager (spec §6.2, hardened), and `entry_pin`.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <sys/file.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/cache_trust.hpp>
#include <cotune/cache/local_key.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/cache/cache_sweep.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/cache/entry_frame.hpp>
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
/// Writes are a locked temporary file plus an atomic rename; each `put` reclaims its key directory's
/// orphaned temporary files (cache.tmp_max_age_s) and, when cache.max_bytes is set, now and then
/// evicts the least recently used entries of the whole cache (cache/cache_sweep.hpp). Lookups never
/// create directories.
class file_cache {
public:
  /// A read refreshes an entry's mtime (its recency for eviction) when it is older than this: at most
  /// one metadata write per entry per hour, and entries used within the same hour are equally recent.
  static constexpr std::chrono::seconds touch_after{3600};

  /// `hex_key`: a lower-case hex digest (typically SHA-256), under the directory the mode's knob names.
  explicit file_cache(std::string_view hex_key, cache_mode mode = cache_mode::normal)
      : file_cache(root_for(mode), hex_key, mode) {}

  /// Files under `hex_key` in the cache rooted at `root` (for tools that examine a given directory).
  file_cache(const std::filesystem::path& root, std::string_view hex_key, cache_mode mode = cache_mode::normal)
      : mode_(mode), key_(hex_key), root_(root) {
    if (!detail::is_hex(hex_key))
      throw cache_error(fmt::format("cache key '{}' is not a lower-case hex digest", hex_key));
    if (root.empty())
      throw cache_error("the cache directory is empty; set COTUNE_CACHE_DIR (or cotune::knobs().cache.dir)");
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex_key.size(); i += 2)
      bytes.push_back(static_cast<char>(std::stoi(std::string(hex_key.substr(i, 2)), nullptr, 16)));
    dir_name_ = detail::base32(bytes);
    dir_ = root / dir_name_;
  }

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] cache_mode mode() const noexcept { return mode_; }

  /// Path of a verified entry, or nothing (absent, damaged or foreign).
  [[nodiscard]] std::optional<std::filesystem::path> get_file(std::string_view name) const {
    validate_cache_file_name(name);
    if (!find(name, /*lock=*/false)) return std::nullopt;
    return dir_ / std::string(name);
  }

  /// Content of a verified entry, or nothing.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    validate_cache_file_name(name);
    auto f = find(name, /*lock=*/false);
    if (!f) return std::nullopt;
    return std::move(f->content);
  }

  /// A verified entry, held against eviction while the handle lives (see entry_pin), or nothing.
  [[nodiscard]] std::optional<entry_pin> pin(std::string_view name) const {
    validate_cache_file_name(name);
    auto f = find(name, /*lock=*/true);
    if (!f) return std::nullopt;
    return entry_pin(std::move(f->file.fd), dir_ / std::string(name));
  }

  /// Stores `data` as `name` (replacing any entry) and returns its path.
  std::filesystem::path put(std::string_view data, std::string_view name) {
    validate_cache_file_name(name);
    if (mode_ == cache_mode::override_)
      throw cache_error(fmt::format("the override cache '{}' is read-only; cannot put '{}'", dir_.string(), name));
    try {
      return store(data, name);
    } catch (const std::system_error& e) {
      throw cache_error(e); // ENOSPC, EROFS, EACCES, EDQUOT...: the path and the fix
    }
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
  /// `put` past its checks; file-system failures come out as std::system_error.
  std::filesystem::path store(std::string_view data, std::string_view name) {
    auto root = detail::open_trusted_root(root_);
    if (!root) {
      detail::make_private_dirs(root_);
      root = detail::open_trusted_root(root_);
      if (!root)
        throw cache_error(fmt::format("cannot open the cache directory '{}': {}; set COTUNE_CACHE_DIR to a writable "
                                      "place",
                                      root_.string(), std::strerror(errno)));
    }
    const auto dir = detail::make_dir_at(root.get(), dir_name_, dir_);
    detail::require_trusted_key_dir(dir.get(), dir_);
    reclaim_temporaries(dir.get());
    const std::string file(name);
    // Flushing is a knob (cache.fsync): without it a crash can cost an entry, never serve a torn one,
    // because readers check the frame and writers rename whole files into place.
    const auto flush = knobs().cache.fsync.get() ? detail::flush_to_disk::yes : detail::flush_to_disk::no;
    if (mode_ == cache_mode::normal)
      detail::atomic_write_at(dir.get(), file, dir_, flush, data, detail::make_frame(key_, name, data, local_cache_key()));
    else detail::atomic_write_at(dir.get(), file, dir_, flush, data);
    if (mode_ == cache_mode::normal) maybe_evict(root.get(), data.size() + detail::frame_size);
    return dir_ / file;
  }

  static std::filesystem::path root_for(cache_mode mode) {
    return mode == cache_mode::dump        ? knobs().cache.dump_dir.get()
           : mode == cache_mode::override_ ? knobs().cache.override_dir.get()
                                           : knobs().cache.dir.get();
  }

  struct found {
    detail::opened_file file;
    std::string content;
  };

  /// The entry `name`, opened below the checked root and key directory without following links,
  /// read and (for normal entries) verified; with `lock`, held under a shared flock.
  [[nodiscard]] std::optional<found> find(std::string_view name, bool lock) const {
    const auto root = detail::open_trusted_root(root_);
    if (!root) return std::nullopt; // missing (or something else in the way): a miss, as before any put
    const auto dir = detail::open_dir_at(root.get(), dir_name_);
    if (!dir) return std::nullopt;
    detail::require_trusted_key_dir(dir.get(), dir_);
    const std::string file(name);
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto f = detail::open_file_at(dir.get(), file);
      if (!f || !detail::trusted_file(f->st)) return std::nullopt;
      // An eviction holds the exclusive lock only while it unlinks; after it, the name may be gone or
      // hold a new entry: look again.
      if (lock && (::flock(f->fd.get(), LOCK_SH) != 0 || !detail::still_linked(dir.get(), file, f->st))) continue;
      auto content = detail::read_all(f->fd.get(), static_cast<std::size_t>(f->st.st_size));
      if (!content) return std::nullopt;
      if (mode_ == cache_mode::normal) {
        auto checked = detail::unframe(key_, name, *content, local_cache_key());
        if (!checked) return std::nullopt;
        content->resize(checked.payload.size()); // the payload is the content's prefix
        if (std::time(nullptr) - f->st.st_mtime >= touch_after.count()) {
          const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
          (void)::futimens(f->fd.get(), times); // a read-only cache keeps its order; that is all
        }
      }
      return found{std::move(*f), std::move(*content)};
    }
    return std::nullopt;
  }

  /// Removes this key directory's temporary files whose writers are gone (cache.tmp_max_age_s).
  static void reclaim_temporaries(int dir) {
    const std::chrono::seconds age(knobs().cache.tmp_max_age_s.get());
    for (const auto& name : detail::names_in(dir)) {
      std::uintmax_t bytes = 0;
      if (detail::is_temporary_name(name)) (void)detail::reclaim_temporary(dir, name, age, bytes);
    }
  }

  /// With cache.max_bytes set, sweeps the whole cache on this process's first write and after every
  /// further tenth of the limit written by it: the cache may exceed the limit by a tenth per writing
  /// process between sweeps, and a sweep (a walk of the cache) stays rare. `cotune cache gc` is exact.
  void maybe_evict(int root, std::size_t bytes) const {
    const auto limit = knobs().cache.max_bytes.get();
    if (limit <= 0) return;
    static std::atomic<bool> swept{false};
    static std::atomic<std::uint64_t> written{0};
    const auto total = written.fetch_add(bytes) + bytes;
    if (swept.exchange(true) && total < static_cast<std::uint64_t>(limit) / 10) return;
    written = 0;
    (void)detail::sweep_cache(root, root_,
                              {static_cast<std::uintmax_t>(limit),
                               std::chrono::seconds(knobs().cache.tmp_max_age_s.get()), false});
  }

  static std::string group_file_name(std::string_view name) {
    validate_cache_file_name(name);
    return "__grp__" + std::string(name) + ".json";
  }

  cache_mode mode_;
  std::string key_;
  std::filesystem::path root_;
  std::string dir_name_;
  std::filesystem::path dir_;
};

static_assert(CacheManager<file_cache>);
static_assert(PinnableCache<file_cache>);

} // namespace cotune
