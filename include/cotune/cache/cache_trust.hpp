#pragma once
/// \file `cotune::check_cache_dir`: whether a cache directory may hold what this process loads.
///
/// The rule is ssh's StrictModes, applied to the cache root and to each key directory: a directory is
/// trusted when it is owned by this process's effective user (or by root, who can write anywhere
/// anyway) and neither its group nor others may write to it. A directory that fails is not used at
/// all: the file cache throws cache_error saying why (the path, the owner or mode found, the fix),
/// and callers fall back (the host backend loads from a process-private directory; the autotuner
/// tunes without the result cache).
///
/// Ancestors of the root are not checked: every later open is relative to the descriptor of the
/// directory that was checked (`openat`, O_NOFOLLOW), so swapping a path component afterwards reaches
/// nothing, and a directory put in its place is checked again when next opened.
///
/// The verdict is cached per process and root, keyed by the root's device, inode, owner and mode:
/// a cache hit costs one open and one fstat of the root, and a fixed directory (chmod 700) is seen
/// at once.

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/dir_fd.hpp>

namespace cotune {

/// A directory's verdict: trusted, or why not (a whole sentence naming the path and the fix).
struct cache_dir_trust {
  bool trusted = true;
  std::string why{};
};

namespace detail {

/// "name (uid N)", or "uid N" for a uid with no name.
[[nodiscard]] inline std::string user_text(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
    return fmt::format("{} (uid {})", found->pw_name, uid);
  return fmt::format("uid {}", uid);
}

/// The verdict on a directory whose status is `st`; `what` says what it is ("cache directory").
[[nodiscard]] inline cache_dir_trust judge_dir(const struct stat& st, const std::filesystem::path& path,
                                               std::string_view what) {
  const uid_t me = ::geteuid();
  if (!S_ISDIR(st.st_mode))
    return {false, fmt::format("the {} '{}' is not a directory; set COTUNE_CACHE_DIR elsewhere", what, path.string())};
  if (st.st_uid != me && st.st_uid != 0)
    return {false, fmt::format("the {} '{}' is owned by {}, not by this process's user {}: cotune loads nothing from "
                               "it; use a directory of your own (set COTUNE_CACHE_DIR) or `chown {} '{}'`",
                               what, path.string(), user_text(st.st_uid), user_text(me), me, path.string())};
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return {false, fmt::format("the {} '{}' is writable by {} (mode {:04o}): anyone who can write there could plant "
                               "what this process loads, so cotune loads nothing from it; run `chmod 700 '{}'` or "
                               "set COTUNE_CACHE_DIR to a private directory",
                               what, path.string(), (st.st_mode & S_IWOTH) ? "others" : "its group",
                               st.st_mode & 07777, path.string())};
  return {};
}

/// Verdicts already reached in this process, per root path (see the file comment).
class trust_memo {
public:
  [[nodiscard]] static trust_memo& instance() {
    static trust_memo m;
    return m;
  }
  [[nodiscard]] cache_dir_trust judge(const struct stat& st, const std::filesystem::path& path, std::string_view what) {
    const auto id = std::make_tuple(st.st_dev, st.st_ino, st.st_uid, st.st_mode);
    std::lock_guard lock(mutex_);
    auto it = verdicts_.find(path.native());
    if (it != verdicts_.end() && it->second.first == id) return it->second.second;
    auto verdict = judge_dir(st, path, what);
    verdicts_.insert_or_assign(path.native(), std::make_pair(id, verdict));
    return verdict;
  }

private:
  using identity = std::tuple<dev_t, ino_t, uid_t, mode_t>;
  std::mutex mutex_;
  std::map<std::string, std::pair<identity, cache_dir_trust>> verdicts_;
};

/// Opens the cache root `root` and checks it: an invalid fd when it cannot be opened (errno set: it
/// is missing, or something else is in the way), and cache_error when it is there but not trusted.
[[nodiscard]] inline unique_fd open_trusted_root(const std::filesystem::path& root) {
  auto fd = open_dir(root);
  if (!fd) return fd;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return unique_fd();
  if (auto v = trust_memo::instance().judge(st, root, "cache directory"); !v.trusted) throw cache_error(v.why);
  return fd;
}

/// Throws cache_error unless the open key directory `fd` (at `path`) is trusted.
inline void require_trusted_key_dir(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw cache_error(fmt::format("cannot examine '{}': {}", path.string(), std::strerror(errno)));
  if (auto v = judge_dir(st, path, "cache key directory"); !v.trusted) throw cache_error(v.why);
}

/// True when a file in a trusted directory may be used: owned by this user (or root), and not
/// writable by group or others (cotune writes 0600; anything else was put there by someone else).
[[nodiscard]] inline bool trusted_file(const struct stat& st) noexcept {
  return (st.st_uid == ::geteuid() || st.st_uid == 0) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace detail

/// The verdict on directory `dir` (a cache root, or any directory a cache would be put in). A missing
/// directory is trusted: the cache creates it 0700.
[[nodiscard]] inline cache_dir_trust check_cache_dir(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return {};
  return detail::judge_dir(st, dir, "cache directory");
}

} // namespace cotune
