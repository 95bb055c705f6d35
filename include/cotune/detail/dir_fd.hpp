#pragma once
/// \file Directory descriptors for the file cache: every open and create inside a cache root is an
/// `openat` relative to a directory already opened and checked, with O_NOFOLLOW, so no symbolic link
/// inside the root is followed and nothing is read or written outside it, whatever is planted there.
///
/// Temporary files are written under an exclusive `flock`, which the kernel drops when the writer
/// dies (kill -9 included): a reclaimer that can take the lock knows that no live process is writing.

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/detail/files.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail {

/// Opens the directory at `path` (links on the way to it are followed: a cache root may be reached
/// through a link, and it is its target that is checked); an invalid fd (errno set) if it cannot.
[[nodiscard]] inline unique_fd open_dir(const std::filesystem::path& path) {
  return unique_fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

/// Opens the directory `name` in `dir`, never following a link (a link is ELOOP or ENOTDIR).
[[nodiscard]] inline unique_fd open_dir_at(int dir, const std::string& name) {
  return unique_fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

/// A regular file `name` in `dir` opened for reading, with its status; never follows a link, and a
/// FIFO or device planted there neither blocks (O_NONBLOCK) nor counts: nothing for them.
struct opened_file {
  unique_fd fd;
  struct stat st {};
};
[[nodiscard]] inline std::optional<opened_file> open_file_at(int dir, const std::string& name) {
  opened_file f{unique_fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)), {}};
  if (!f.fd) return std::nullopt;
  if (::fstat(f.fd.get(), &f.st) != 0 || !S_ISREG(f.st.st_mode)) return std::nullopt;
  return f;
}

/// Everything in an open file from offset 0, or nothing on a read error.
[[nodiscard]] inline std::optional<std::string> read_all(int fd, std::size_t size_hint = 0) {
  std::string data;
  data.reserve(size_hint);
  char buf[65536];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return data;
}

/// True when `name` in `dir` is still the file open as `st` (it was not removed or replaced since).
[[nodiscard]] inline bool still_linked(int dir, const std::string& name, const struct stat& st) {
  struct stat now {};
  return ::fstatat(dir, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
         now.st_ino == st.st_ino;
}

/// Opens the directory `name` in `dir`, creating it 0700 if it is missing. A link where the
/// directory belongs is removed (the link only, never its target) and replaced by a directory.
/// Throws std::system_error naming `shown` (the path, for messages).
[[nodiscard]] inline unique_fd make_dir_at(int dir, const std::string& name, const std::filesystem::path& shown) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::mkdirat(dir, name.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(), fmt::format("cannot create directory '{}'", shown.string()));
    if (auto fd = open_dir_at(dir, name)) return fd;
    const int err = errno;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      ::unlinkat(dir, name.c_str(), 0);
      continue;
    }
    if (err == ENOENT) continue; // removed by a concurrent gc between mkdirat and openat
    throw std::system_error(err, std::generic_category(),
                            fmt::format("cannot open directory '{}' (remove what is there)", shown.string()));
  }
  throw std::system_error(EEXIST, std::generic_category(),
                          fmt::format("cannot create directory '{}': it keeps being replaced", shown.string()));
}

/// True for names of temporary files (writes in progress, or left by writers that died).
[[nodiscard]] constexpr bool is_temporary_name(std::string_view name) noexcept { return name.starts_with(".tmp."); }

/// A temporary file in `dir`, written under an exclusive lock, then renamed onto its target: readers
/// see the old file, the new one or none, never a partial one. Removed if never committed.
class temp_file_writer {
public:
  /// Creates the temporary file for `target` (a name in `dir`; `dir_shown` is its path, for messages).
  temp_file_writer(int dir, std::string target, std::filesystem::path dir_shown)
      : dir_(dir), target_(std::move(target)), shown_(std::move(dir_shown)) {
    for (int attempt = 0;; ++attempt) {
      // The target's name is cut to 64 bytes: with a 255-byte name the temporary name would exceed NAME_MAX.
      tmp_ = fmt::format(".tmp.{}.{}.{}", std::string_view(target_).substr(0, 64), ::getpid(), random_suffix());
      fd_ = unique_fd(::openat(dir_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!fd_)
        throw std::system_error(errno, std::generic_category(), fmt::format("cannot write file '{}'", (shown_ / tmp_).string()));
      ::flock(fd_.get(), LOCK_EX); // see the file comment; a failure (no flock here) leaves the age rule
      // A reclaimer may have taken the file between its creation and the lock: then it is gone; retry.
      struct stat st {};
      if (::fstat(fd_.get(), &st) == 0 && st.st_nlink > 0) break;
      fd_.reset();
      if (attempt == 3)
        throw std::system_error(ENOENT, std::generic_category(),
                                fmt::format("cannot write file '{}': it keeps being removed", (shown_ / tmp_).string()));
    }
  }
  temp_file_writer(const temp_file_writer&) = delete;
  temp_file_writer& operator=(const temp_file_writer&) = delete;
  ~temp_file_writer() {
    if (fd_) ::unlinkat(dir_, tmp_.c_str(), 0);
  }

  [[nodiscard]] const std::string& temporary_name() const noexcept { return tmp_; }

  void write(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_.get(), data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// Flushes what was written to disk.
  void sync() {
    if (::fsync(fd_.get()) != 0) fail("flush");
  }

  /// Renames the file onto the target, flushing it to disk first when `flush` (otherwise a crash may
  /// leave the target empty or short, which a checksummed reader sees as a miss).
  void commit(bool flush = true) {
    if (flush) sync();
    if (::renameat(dir_, tmp_.c_str(), dir_, target_.c_str()) != 0) {
      const int err = errno;
      throw std::system_error(err, std::generic_category(),
                              fmt::format("cannot rename '{}' onto '{}'", (shown_ / tmp_).string(), (shown_ / target_).string()));
    }
    fd_.reset(); // closing drops the lock; the file now has its final name
  }

private:
  [[noreturn]] void fail(const char* what) const {
    throw std::system_error(errno, std::generic_category(), fmt::format("cannot {} file '{}'", what, (shown_ / tmp_).string()));
  }

  int dir_;
  std::string target_;
  std::filesystem::path shown_;
  std::string tmp_;
  unique_fd fd_;
};

/// Whether a write is flushed to disk before it is renamed into place.
enum class flush_to_disk : bool { no, yes };

/// Writes `parts` (concatenated) as `target` in `dir` through a temporary file and a rename.
template <class... Parts>
void atomic_write_at(int dir, const std::string& target, const std::filesystem::path& dir_shown, flush_to_disk flush,
                     const Parts&... parts) {
  temp_file_writer w(dir, target, dir_shown);
  (w.write(std::string_view(parts)), ...);
  w.commit(flush == flush_to_disk::yes);
}

/// The same, flushed to disk.
template <class... Parts>
void atomic_write_at(int dir, const std::string& target, const std::filesystem::path& dir_shown, const Parts&... parts) {
  atomic_write_at(dir, target, dir_shown, flush_to_disk::yes, parts...);
}

/// Removes the temporary file `name` in `dir` if it is at least `min_age` old and no live process
/// holds its lock; true if it was removed. `bytes` receives its size.
inline bool reclaim_temporary(int dir, const std::string& name, std::chrono::seconds min_age, std::uintmax_t& bytes) {
  if (!is_temporary_name(name)) return false;
  const unique_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (std::time(nullptr) - st.st_mtime < min_age.count()) return false;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false; // a live writer holds it
  if (!still_linked(dir, name, st)) return false;
  if (::unlinkat(dir, name.c_str(), 0) != 0) return false;
  bytes = static_cast<std::uintmax_t>(st.st_size);
  return true;
}

} // namespace cotune::detail
