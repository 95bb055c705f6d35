#pragma once
/// \file The bodies of cache/file_cache.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <sys/file.h>
#include <sys/stat.h>

#include <simdjson.h>

#include <cotune/cache/cache_ledger.hpp>
#include <cotune/cache/cache_sweep.hpp>
#include <cotune/cache/cache_trust.hpp>
#include <cotune/cache/entry_frame.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/cache/local_key.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

struct file_cache::found {
  detail::opened_file file;
  std::string content;
};

COTUNE_DECL void validate_cache_file_name(std::string_view name) {
  const bool bad = name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos ||
                   name.find('\0') != std::string_view::npos || name.find("..") != std::string_view::npos ||
                   name == "." || name.starts_with(".tmp.");
  if (bad) {
    std::string shown;
    for (char c : name) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    throw cache_error(
        fmt::format(COTUNE_FMT("cache file name '{}' is refused: a name must be a plain file name (no '/', "
                               "'..' or NUL, not empty, not starting with '.tmp.', at most 255 bytes)"),
                    shown));
  }
}

COTUNE_DECL file_cache::file_cache(const std::filesystem::path& root, std::string_view hex_key, cache_mode mode)
    : mode_(mode), key_(hex_key), root_(root) {
  if (!detail::is_hex(hex_key))
    throw cache_error(fmt::format(COTUNE_FMT("cache key '{}' is not a lower-case hex digest"), hex_key));
  if (root.empty())
    throw cache_error("the cache directory is empty; set COTUNE_CACHE_DIR (or cotune::knobs().cache.dir)");
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex_key.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(std::string(hex_key.substr(i, 2)), nullptr, 16)));
  dir_name_ = detail::base32(bytes);
  dir_ = root / dir_name_;
}

COTUNE_DECL std::optional<std::filesystem::path> file_cache::get_file(std::string_view name) const {
  validate_cache_file_name(name);
  if (!find(name, /*lock=*/false)) return std::nullopt;
  return dir_ / std::string(name);
}

COTUNE_DECL std::optional<std::string> file_cache::get(std::string_view name) const {
  validate_cache_file_name(name);
  auto f = find(name, /*lock=*/false);
  if (!f) return std::nullopt;
  return std::move(f->content);
}

COTUNE_DECL std::optional<entry_pin> file_cache::pin(std::string_view name) const {
  validate_cache_file_name(name);
  auto f = find(name, /*lock=*/true);
  if (!f) return std::nullopt;
  return entry_pin(std::move(f->file.fd), dir_ / std::string(name));
}

COTUNE_DECL std::filesystem::path file_cache::put(std::string_view data, std::string_view name) {
  validate_cache_file_name(name);
  if (mode_ == cache_mode::override_)
    throw cache_error(
        fmt::format(COTUNE_FMT("the override cache '{}' is read-only; cannot put '{}'"), dir_.string(), name));
  try {
    return store(data, name);
  } catch (const std::system_error& e) {
    throw cache_error(e); // ENOSPC, EROFS, EACCES, EDQUOT...: the path and the fix
  }
}

COTUNE_DECL std::optional<cache_group> file_cache::get_group(std::string_view name) const {
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

COTUNE_DECL std::filesystem::path file_cache::put_group(std::string_view name, const cache_group& children) {
  json_writer w;
  w.begin_object().key("children").begin_array();
  for (const auto& [child, path] : children) {
    validate_cache_file_name(child);
    w.value(child);
  }
  return put(std::move(w.end_array().end_object()).take(), group_file_name(name));
}

COTUNE_DECL std::filesystem::path file_cache::store(std::string_view data, std::string_view name) {
  auto root = detail::open_trusted_root(root_);
  if (!root) {
    detail::make_private_dirs(root_);
    root = detail::open_trusted_root(root_);
    if (!root)
      throw cache_error(
          fmt::format(COTUNE_FMT("cannot open the cache directory '{}': {}; set COTUNE_CACHE_DIR to a writable "
                                 "place"),
                      root_.string(), std::strerror(errno)));
  }
  auto dir = detail::make_dir_at(root.get(), dir_name_, dir_);
  detail::require_trusted_key_dir(dir.get(), dir_);
  reclaim_temporaries(dir.get());
  const std::string file(name);
  // Flushing is a knob (cache.fsync): without it a crash can cost an entry, never serve a torn one,
  // because readers check the frame and writers rename whole files into place.
  const bool flush = knobs().cache.fsync.get();
  if (mode_ != cache_mode::normal) {
    // Not under the ledger's lock, where an eviction removes a key directory it empties: if this one
    // went before the temporary file was made in it, it is made again.
    for (int attempt = 0;; ++attempt) {
      try {
        detail::atomic_write_at(dir.get(), file, dir_, flush ? detail::flush_to_disk::yes : detail::flush_to_disk::no,
                                data);
        return dir_ / file;
      } catch (const std::system_error& e) {
        if (e.code().value() != ENOENT || attempt == 3) throw;
        dir = detail::make_dir_at(root.get(), dir_name_, dir_);
        detail::require_trusted_key_dir(dir.get(), dir_);
      }
    }
  }
  const std::string frame = detail::make_frame(key_, name, data, local_cache_key());
  const std::uint64_t bytes = data.size() + frame.size();
  // The ledger's three steps (cache/cache_ledger.hpp): reserve under its lock, write without it,
  // rename under it.
  std::optional<detail::temp_file_writer> w;
  {
    detail::cache_ledger ledger(root.get(), root_);
    make_room(root.get(), ledger, bytes);
    // The key directory again, under the lock: an eviction (under it too) removes a directory it empties.
    dir = detail::make_dir_at(root.get(), dir_name_, dir_);
    detail::require_trusted_key_dir(dir.get(), dir_);
    w.emplace(dir.get(), file, dir_);
    w->reserve(bytes);
    ledger.add(static_cast<std::int64_t>(bytes));
    ledger.written += bytes;
    ledger.writes.push_back({dir_name_, w->temporary_name(), bytes});
    ledger.save();
  }
  struct unreserve { // a write that fails: its temporary file goes, and its bytes with it
    int root;
    const std::filesystem::path& root_shown;
    const std::string& dir, &temporary;
    std::uint64_t bytes;
    bool armed = true;
    ~unreserve() {
      if (!armed) return;
      try {
        detail::cache_ledger ledger(root, root_shown);
        forget(ledger, dir, temporary);
        ledger.add(-static_cast<std::int64_t>(bytes));
        ledger.save();
      } catch (...) {
        // the ledger errs high until the next walk
      }
    }
  } on_failure{root.get(), root_, dir_name_, w->temporary_name(), bytes};
  const std::size_t half = data.size() / 2;
  w->write(data.substr(0, half));
  if (auto hook = detail::put_midway_hook) hook((dir_ / w->temporary_name()).string());
  w->write(data.substr(half));
  w->write(frame);
  if (flush) w->sync();
  {
    detail::cache_ledger ledger(root.get(), root_);
    struct stat old {};
    const bool replaces = ::fstatat(dir.get(), file.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
    const std::string temporary = w->temporary_name();
    w->commit(false);
    on_failure.armed = false;
    forget(ledger, dir_name_, temporary);
    if (replaces) ledger.add(-static_cast<std::int64_t>(old.st_size));
    ledger.save();
  }
  return dir_ / file;
}

COTUNE_DECL void file_cache::forget(detail::cache_ledger& ledger, const std::string& dir, const std::string& temporary) {
  std::erase_if(ledger.writes, [&](const auto& w) { return w.dir == dir && w.temporary == temporary; });
}

COTUNE_DECL std::filesystem::path file_cache::root_for(cache_mode mode) {
  return mode == cache_mode::dump        ? knobs().cache.dump_dir.get()
         : mode == cache_mode::override_ ? knobs().cache.override_dir.get()
                                         : knobs().cache.dir.get();
}

COTUNE_DECL std::optional<file_cache::found> file_cache::find(std::string_view name, bool lock) const {
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
      if (detail::modified_ago(f->st) >= touch_after) {
        const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
        (void)::futimens(f->fd.get(), times); // a read-only cache keeps its order; that is all
      }
    }
    return found{std::move(*f), std::move(*content)};
  }
  return std::nullopt;
}

COTUNE_DECL void file_cache::reclaim_temporaries(int dir) {
  const std::chrono::seconds age(knobs().cache.tmp_max_age_s.get());
  for (const auto& name : detail::names_in(dir)) {
    std::uintmax_t bytes = 0;
    if (detail::is_temporary_name(name)) (void)detail::reclaim_temporary(dir, name, age, bytes);
  }
}

COTUNE_DECL void file_cache::make_room(int root, detail::cache_ledger& ledger, std::uint64_t bytes) const {
  ledger.reclaim_dead_writes(root);
  const auto limit = static_cast<std::uint64_t>(knobs().cache.max_bytes.get());
  if (limit == 0) return;
  // A walk when the total is unknown (a new or torn ledger), when this entry would not fit, and after
  // every `limit` bytes written (to find files added behind the ledger's back).
  if (ledger.bytes && *ledger.bytes + bytes <= limit && ledger.written < limit) return;
  // Down to a tenth below the limit, so that the next walk is a tenth of the limit's writes away.
  const std::uint64_t room = bytes + limit / 10;
  const auto target = limit > room ? limit - room : 1;
  const auto report =
      detail::sweep_cache(root, root_, {target, std::chrono::seconds(knobs().cache.tmp_max_age_s.get()), false, true});
  ledger.bytes.reset(); // forgets the in-flight writes the walk reclaimed, whose bytes it did not count
  ledger.reclaim_dead_writes(root);
  ledger.bytes = report.bytes_after + report.temporary_bytes_left;
  ledger.written = 0;
}

COTUNE_DECL std::string file_cache::group_file_name(std::string_view name) {
  validate_cache_file_name(name);
  return "__grp__" + std::string(name) + ".json";
}

} // namespace cotune
