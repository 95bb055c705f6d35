#pragma once
/// \file The bodies of cache/cache_trust.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/cache/cache_trust.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/dir_fd.hpp>

namespace cotune::detail {

COTUNE_DECL std::string user_text(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
    return fmt::format(COTUNE_FMT("{} (uid {})"), found->pw_name, uid);
  return fmt::format(COTUNE_FMT("uid {}"), uid);
}

COTUNE_DECL cache_dir_trust judge_dir(const struct stat& st, const std::filesystem::path& path, std::string_view what) {
  const uid_t me = ::geteuid();
  if (!S_ISDIR(st.st_mode))
    return {false, fmt::format(COTUNE_FMT("the {} '{}' is not a directory; set COTUNE_CACHE_DIR elsewhere"), what,
                               path.string())};
  if (st.st_uid != me && st.st_uid != 0)
    return {
        false,
        fmt::format(COTUNE_FMT("the {} '{}' is owned by {}, not by this process's user {}: cotune loads nothing from "
                               "it; use a directory of your own (set COTUNE_CACHE_DIR) or `chown {} '{}'`"),
                    what, path.string(), user_text(st.st_uid), user_text(me), me, path.string())};
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return {false, fmt::format(
                       COTUNE_FMT("the {} '{}' is writable by {} (mode {:04o}): anyone who can write there could plant "
                                  "what this process loads, so cotune loads nothing from it; run `chmod 700 '{}'` or "
                                  "set COTUNE_CACHE_DIR to a private directory"),
                       what, path.string(), (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777,
                       path.string())};
  return {};
}

COTUNE_DECL trust_memo& trust_memo::instance() {
  static trust_memo m;
  return m;
}

COTUNE_DECL cache_dir_trust trust_memo::judge(const struct stat& st, const std::filesystem::path& path, std::string_view what) {
  const auto id = std::make_tuple(st.st_dev, st.st_ino, st.st_uid, st.st_mode);
  std::lock_guard lock(mutex_);
  auto it = verdicts_.find(path.native());
  if (it != verdicts_.end() && it->second.first == id) return it->second.second;
  auto verdict = judge_dir(st, path, what);
  verdicts_.insert_or_assign(path.native(), std::make_pair(id, verdict));
  return verdict;
}

COTUNE_DECL unique_fd open_trusted_root(const std::filesystem::path& root) {
  auto fd = open_dir(root);
  if (!fd) return fd;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return unique_fd();
  if (auto v = trust_memo::instance().judge(st, root, "cache directory"); !v.trusted) throw cache_error(v.why);
  return fd;
}

COTUNE_DECL void require_trusted_key_dir(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw cache_error(fmt::format(COTUNE_FMT("cannot examine '{}': {}"), path.string(), std::strerror(errno)));
  if (auto v = judge_dir(st, path, "cache key directory"); !v.trusted) throw cache_error(v.why);
}

} // namespace cotune::detail

namespace cotune {

COTUNE_DECL cache_dir_trust check_cache_dir(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return {};
  return detail::judge_dir(st, dir, "cache directory");
}

} // namespace cotune
