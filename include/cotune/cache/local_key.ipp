#pragma once
/// \file The bodies of cache/local_key.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/cache/cache_trust.hpp>
#include <cotune/cache/local_key.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::detail {

COTUNE_DECL void create_key_file(const std::filesystem::path& path) {
  make_private_dirs(path.parent_path());
  std::uint8_t bytes[32];
  for (std::size_t got = 0; got < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw cache_error(fmt::format(COTUNE_FMT("cannot make a cache key: getrandom: {}"), std::strerror(errno)));
    got += static_cast<std::size_t>(n);
  }
  const auto dir = open_dir(path.parent_path());
  if (!dir)
    throw cache_error(fmt::format(COTUNE_FMT("cannot open '{}' to create the cache key file: {}"),
                                  path.parent_path().string(), std::strerror(errno)));
  temp_file_writer w(dir.get(), path.filename().string() + ".new", path.parent_path());
  w.write(to_hex(bytes));
  w.write("\n");
  w.sync();
  const auto tmp = w.temporary_name();
  // link, not rename: if another process created the key meanwhile, its key stays and ours is dropped.
  if (::linkat(dir.get(), tmp.c_str(), dir.get(), path.filename().c_str(), 0) != 0 && errno != EEXIST)
    throw cache_error(
        fmt::format(COTUNE_FMT("cannot create the cache key file '{}': {}; set COTUNE_CACHE_KEY_FILE to a "
                               "writable place"),
                    path.string(), std::strerror(errno)));
  // `w` is never committed: its destructor removes the temporary name.
}

COTUNE_DECL std::string read_key_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    try {
      create_key_file(path);
    } catch (const std::system_error& e) {
      throw cache_error(
          fmt::format(COTUNE_FMT("cannot create the cache key file '{}': {}; set COTUNE_CACHE_KEY_FILE to a "
                                 "writable place"),
                      path.string(), e.what()));
    }
    fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  const unique_fd owned(fd);
  if (!owned)
    throw cache_error(fmt::format(COTUNE_FMT("cannot read the cache key file '{}': {}{}"), path.string(),
                                  std::strerror(errno),
                                  errno == ELOOP ? " (a symbolic link is refused: name the file itself)" : ""));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw cache_error(fmt::format(COTUNE_FMT("the cache key file '{}' is not a regular file"), path.string()));
  if (st.st_uid != ::geteuid())
    throw cache_error(
        fmt::format(COTUNE_FMT("the cache key file '{}' is owned by {}, not by this process's user {}; use a key "
                               "file of your own (COTUNE_CACHE_KEY_FILE)"),
                    path.string(), user_text(st.st_uid), user_text(::geteuid())));
  if ((st.st_mode & 077) != 0)
    throw cache_error(
        fmt::format(COTUNE_FMT("the cache key file '{}' may be read or written by others (mode {:04o}); run "
                               "`chmod 600 '{}'`"),
                    path.string(), st.st_mode & 07777, path.string()));
  auto text = read_all(fd, static_cast<std::size_t>(st.st_size));
  if (!text)
    throw cache_error(
        fmt::format(COTUNE_FMT("cannot read the cache key file '{}': {}"), path.string(), std::strerror(errno)));
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r' || text->back() == ' ')) text->pop_back();
  if (text->empty())
    throw cache_error(
        fmt::format(COTUNE_FMT("the cache key file '{}' is empty; remove it and a new key is made"), path.string()));
  return *text;
}

} // namespace cotune::detail

namespace cotune {

COTUNE_DECL std::string local_cache_key() {
  if (auto key = knobs().cache.local_key.get(); key && !key->empty()) return *key;
  const auto file = knobs().cache.local_key_file.get();
  if (!file || file->empty()) return {};
  static std::mutex mutex;
  static std::map<std::string, std::string> read; // path -> key: read once per process
  std::lock_guard lock(mutex);
  if (auto it = read.find(*file); it != read.end()) return it->second;
  auto key = detail::read_key_file(*file);
  read.emplace(*file, key);
  return key;
}

} // namespace cotune
