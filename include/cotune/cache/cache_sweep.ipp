#pragma once
/// \file The bodies of cache/cache_sweep.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cotune/cache/cache_sweep.hpp>
#include <cotune/cache/cache_trust.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

COTUNE_DECL std::vector<std::string> names_in(int dir) {
  std::vector<std::string> out;
  const int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return out;
  DIR* d = ::fdopendir(copy);
  if (!d) {
    ::close(copy);
    return out;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

COTUNE_DECL bool is_key_dir_name(std::string_view name) {
  if (name.size() != 52) return false;
  auto bytes = base32_decode(name);
  return bytes && bytes->size() == 32;
}

COTUNE_DECL bool evict_entry(int dir, const std::string& name, bool& pinned) {
  pinned = false;
  auto f = open_file_at(dir, name);
  if (!f) return false;
  if (::flock(f->fd.get(), LOCK_EX | LOCK_NB) != 0) {
    pinned = true;
    return false;
  }
  if (!still_linked(dir, name, f->st)) return false;
  return ::unlinkat(dir, name.c_str(), 0) == 0;
}

COTUNE_DECL sweep_report sweep_cache(int root, const std::filesystem::path& root_path, const sweep_options& opts) {
  struct entry {
    std::int64_t used_ns; ///< mtime to the nanosecond: entries written within one second still have an order
    std::string dir, name;
    std::uintmax_t bytes;
  };
  sweep_report report;
  std::vector<entry> entries;
  for (const auto& dir_name : names_in(root)) {
    if (!is_key_dir_name(dir_name)) continue;
    const auto dir = open_dir_at(root, dir_name);
    if (!dir) continue; // a link or a file where a key directory would be: not ours to follow
    try {
      require_trusted_key_dir(dir.get(), root_path / dir_name);
    } catch (const cache_error& e) {
      report.skipped.emplace_back(e.what());
      continue;
    }
    std::size_t left = 0;
    for (const auto& name : names_in(dir.get())) {
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      ++left;
      if (!S_ISREG(st.st_mode)) continue;
      if (is_temporary_name(name)) {
        std::uintmax_t bytes = 0;
        if (reclaim_temporary(dir.get(), name, opts.tmp_max_age, bytes)) {
          ++report.temporaries_removed;
          report.temporary_bytes += bytes;
          --left;
        } else {
          report.temporary_bytes_left += static_cast<std::uintmax_t>(st.st_size);
        }
        continue;
      }
      entries.push_back({std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, dir_name, name,
                         static_cast<std::uintmax_t>(st.st_size)});
      report.bytes_before += static_cast<std::uintmax_t>(st.st_size);
    }
    struct stat dst {};
    if (left == 0 &&
        (opts.remove_emptied_dirs ||
         (opts.remove_empty_dirs && ::fstat(dir.get(), &dst) == 0 && modified_ago(dst) >= opts.tmp_max_age)) &&
        ::unlinkat(root, dir_name.c_str(), AT_REMOVEDIR) == 0)
      ++report.dirs_removed;
  }
  report.bytes_after = report.bytes_before;
  auto over = [&] { return report.bytes_after + report.temporary_bytes_left > opts.max_bytes; };
  if (opts.max_bytes > 0 && over()) {
    std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
      return std::tie(a.used_ns, a.dir, a.name) < std::tie(b.used_ns, b.dir, b.name);
    });
    for (const auto& e : entries) {
      if (!over()) break;
      const auto dir = open_dir_at(root, e.dir);
      if (!dir) continue;
      bool pinned = false;
      if (evict_entry(dir.get(), e.name, pinned)) {
        ++report.evicted;
        report.evicted_bytes += e.bytes;
        report.bytes_after -= e.bytes;
        // Its directory goes with its last file (a directory that still holds one stays).
        if (opts.remove_emptied_dirs && ::unlinkat(root, e.dir.c_str(), AT_REMOVEDIR) == 0) ++report.dirs_removed;
      } else if (pinned) {
        ++report.pinned;
      }
    }
  }
  return report;
}

} // namespace cotune::detail
