#pragma once
/// \file The bodies of cache/cache_inventory.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

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

#include <fmt/core.h>

#include <cotune/cache/cache_ledger.hpp>
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
#include <cotune/cache/cache_inventory.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

COTUNE_DECL cache_gc_options cache_gc_options::from_knobs() {
  return {static_cast<std::uintmax_t>(knobs().cache.max_bytes.get()),
          std::chrono::seconds(knobs().cache.tmp_max_age_s.get())};
}

COTUNE_DECL bool cache_inventory::exists() const {
  std::error_code ec;
  if (std::filesystem::is_directory(root_, ec)) return true;
  if (std::filesystem::exists(root_, ec))
    throw cache_error(fmt::format(COTUNE_FMT("'{}' is not a directory; pass the cache directory (COTUNE_CACHE_DIR)"),
                                  root_.string()));
  return false;
}

COTUNE_DECL std::optional<std::string> cache_inventory::key_of_dir(std::string_view name) {
  if (name.size() != 52) return std::nullopt;
  auto bytes = detail::base32_decode(name);
  if (!bytes || bytes->size() != 32) return std::nullopt;
  return detail::to_hex(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
}

COTUNE_DECL std::vector<cache_file> cache_inventory::files(const entry_describer& describe) const {
  std::vector<cache_file> out;
  if (!exists()) return out;
  namespace fs = std::filesystem;
  const auto root_fd = detail::open_dir(root_);
  const std::string secret = local_cache_key();
  for (const auto& top : sorted_entries(root_)) {
    const auto top_name = top.path().filename().string();
    const auto top_status = top.symlink_status();
    if (top_name == detail::cache_ledger::file_name && fs::is_regular_file(top_status)) continue; // bookkeeping
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

COTUNE_DECL cache_gc_report cache_inventory::gc(const cache_gc_options& opts) const {
  cache_gc_report r;
  if (!exists()) return r;
  const auto root_fd = detail::open_trusted_root(root_);
  if (!root_fd)
    throw cache_error(
        fmt::format(COTUNE_FMT("cannot open the cache directory '{}': {}"), root_.string(), std::strerror(errno)));
  // Under the ledger's lock (cache/cache_ledger.hpp): no put commits while the walk counts, and the
  // ledger takes the walk's count.
  detail::cache_ledger ledger(root_fd.get(), root_);
  const auto s = detail::sweep_cache(root_fd.get(), root_, {opts.max_bytes, opts.tmp_max_age, true, true});
  ledger.bytes.reset();
  ledger.reclaim_dead_writes(root_fd.get());
  ledger.bytes = s.bytes_after + s.temporary_bytes_left;
  ledger.written = 0;
  ledger.save();
  r.temporaries_removed = s.temporaries_removed;
  r.temporary_bytes = s.temporary_bytes;
  r.temporary_bytes_left = s.temporary_bytes_left;
  r.evicted = s.evicted;
  r.evicted_bytes = s.evicted_bytes;
  r.pinned = s.pinned;
  r.dirs_removed = s.dirs_removed;
  r.bytes_before = s.bytes_before;
  r.bytes_after = s.bytes_after;
  r.skipped = s.skipped;
  return r;
}

COTUNE_DECL cache_totals cache_inventory::totals(const std::vector<cache_file>& files) {
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

COTUNE_DECL cache_clear_plan cache_inventory::plan_clear() const {
  cache_clear_plan plan;
  if (!exists()) return plan;
  namespace fs = std::filesystem;
  for (const auto& e : sorted_entries(root_)) {
    if (fs::is_directory(e.symlink_status()) && key_of_dir(e.path().filename().string())) {
      plan.key_dirs.push_back(e.path());
      for (const auto& f : fs::recursive_directory_iterator(e.path()))
        if (fs::is_regular_file(f.symlink_status())) plan.bytes += f.file_size();
    } else if (e.path().filename() != detail::cache_ledger::file_name) {
      ++plan.left_alone;
    }
  }
  return plan;
}

COTUNE_DECL void cache_inventory::clear(const cache_clear_plan& plan) const {
  for (const auto& dir : plan.key_dirs) {
    if (dir.parent_path() != root_ || !key_of_dir(dir.filename().string()))
      throw cache_error(fmt::format(COTUNE_FMT("'{}' is not a key directory of the cache '{}'; not removed"),
                                    dir.string(), root_.string()));
    std::filesystem::remove_all(dir);
  }
}

COTUNE_DECL stored_entry cache_inventory::read_entry(const std::filesystem::path& file) {
  auto text = detail::read_file(file);
  if (!text)
    throw cache_error(
        fmt::format(COTUNE_FMT("cannot read '{}': it does not exist or is not a regular file"), file.string()));
  const auto key = key_of_dir(std::filesystem::absolute(file).parent_path().filename().string());
  const auto checked = key ? detail::unframe(*key, file.filename().string(), *text, local_cache_key())
                           : detail::unframed{};
  if (checked) return {std::string(checked.payload), true};
  if (std::string_view(*text).ends_with(detail::frame_tail))
    throw cache_error(
        fmt::format(COTUNE_FMT("'{}' is a damaged, renamed or moved cache entry ({}: an entry is bound to its "
                               "file name and its key's directory, so show it where the cache keeps it); the "
                               "tuning result cannot be trusted"),
                    file.string(), fault_note(checked.fault)));
  return {std::move(*text), false};
}

COTUNE_DECL std::string cache_inventory::fault_note(entry_fault f) {
  switch (f) {
  case entry_fault::unsigned_entry:
    return "unsigned: a reader holding the local cache key (COTUNE_CACHE_KEY, COTUNE_CACHE_KEY_FILE) refuses it";
  case entry_fault::bad_signature: return "signed with another local cache key";
  case entry_fault::bad_version: return "written by another cache format";
  default: return "the frame does not check out (damaged, truncated, renamed, or copied from another key)";
  }
}

COTUNE_DECL void cache_inventory::check_entry(int dir, const std::string& key, const std::string& secret, cache_file& f,
                        const entry_describer& describe) {
  auto opened = detail::open_file_at(dir, f.file);
  if (opened && !detail::trusted_file(opened->st)) {
    f.note = fmt::format(COTUNE_FMT("owned by {} or writable by others (mode {:04o}): readers ignore it"),
                         detail::user_text(opened->st.st_uid), opened->st.st_mode & 07777);
    return;
  }
  auto content = opened ? detail::read_all(opened->fd.get()) : std::nullopt;
  const auto checked = content ? detail::unframe(key, f.file, *content, secret) : detail::unframed{};
  f.status = checked ? cache_file_status::valid : cache_file_status::corrupt;
  if (!checked) f.note = fault_note(checked.fault);
  else if (describe) f.note = describe(f, checked.payload);
}

COTUNE_DECL std::vector<std::filesystem::directory_entry>
cache_inventory::sorted_entries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::directory_entry> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

} // namespace cotune
