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

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include <cotune/detail/config.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune {

/// A directory's verdict: trusted, or why not (a whole sentence naming the path and the fix).
struct cache_dir_trust {
  bool trusted = true;
  std::string why{};
};

namespace detail {

/// "name (uid N)", or "uid N" for a uid with no name.
[[nodiscard]] COTUNE_DECL std::string user_text(uid_t uid);

/// The verdict on a directory whose status is `st`; `what` says what it is ("cache directory").
[[nodiscard]] COTUNE_DECL cache_dir_trust judge_dir(const struct stat& st, const std::filesystem::path& path,
                                                    std::string_view what);

/// Verdicts already reached in this process, per root path (see the file comment).
class trust_memo {
public:
  [[nodiscard]] COTUNE_DECL static trust_memo& instance();
  [[nodiscard]] COTUNE_DECL cache_dir_trust judge(const struct stat& st, const std::filesystem::path& path,
                                                std::string_view what);

private:
  using identity = std::tuple<dev_t, ino_t, uid_t, mode_t>;
  std::mutex mutex_;
  std::map<std::string, std::pair<identity, cache_dir_trust>> verdicts_;
};

/// Opens the cache root `root` and checks it: an invalid fd when it cannot be opened (errno set: it
/// is missing, or something else is in the way), and cache_error when it is there but not trusted.
[[nodiscard]] COTUNE_DECL unique_fd open_trusted_root(const std::filesystem::path& root);

/// Throws cache_error unless the open key directory `fd` (at `path`) is trusted.
COTUNE_DECL void require_trusted_key_dir(int fd, const std::filesystem::path& path);

/// True when a file in a trusted directory may be used: owned by this user (or root), and not
/// writable by group or others (cotune writes 0600; anything else was put there by someone else).
[[nodiscard]] inline bool trusted_file(const struct stat& st) noexcept {
  return (st.st_uid == ::geteuid() || st.st_uid == 0) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace detail

/// The verdict on directory `dir` (a cache root, or any directory a cache would be put in). A missing
/// directory is trusted: the cache creates it 0700.
[[nodiscard]] COTUNE_DECL cache_dir_trust check_cache_dir(const std::filesystem::path& dir);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/cache_trust.ipp>
#endif
