#pragma once
/// \file Directory descriptors for the file cache: every open and create inside a cache root is an
/// `openat` relative to a directory already opened and checked, with O_NOFOLLOW, so no symbolic link
/// inside the root is followed and nothing is read or written outside it, whatever is planted there.
///
/// Temporary files are written under an exclusive `flock`, which the kernel drops when the writer
/// dies (kill -9 included): a reclaimer that can take the lock knows that no live process is writing.
/// Their names also say who writes them (".tmp.<target>.<random>.w<pid>-<start>@<host>": the process
/// id, its start time in clock ticks after boot, and the host), so that a reclaimer on the same host
/// knows a dead writer's file at once, whatever its age; files of writers on other hosts (a shared
/// mount, where a lock may not cross machines) are reclaimed by age alone.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cotune/detail/config.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/unique_fd.hpp>

namespace cotune::detail {

/// Opens the directory at `path` (links on the way to it are followed: a cache root may be reached
/// through a link, and it is its target that is checked); an invalid fd (errno set) if it cannot.
[[nodiscard]] COTUNE_DECL unique_fd open_dir(const std::filesystem::path& path);

/// Opens the directory `name` in `dir`, never following a link (a link is ELOOP or ENOTDIR).
[[nodiscard]] COTUNE_DECL unique_fd open_dir_at(int dir, const std::string& name);

/// A regular file `name` in `dir` opened for reading, with its status; never follows a link, and a
/// FIFO or device planted there neither blocks (O_NONBLOCK) nor counts: nothing for them.
struct opened_file {
  unique_fd fd;
  struct stat st {};
};
[[nodiscard]] COTUNE_DECL std::optional<opened_file> open_file_at(int dir, const std::string& name);

/// Everything in an open file from offset 0, or nothing on a read error.
[[nodiscard]] COTUNE_DECL std::optional<std::string> read_all(int fd, std::size_t size_hint = 0);

/// True when `name` in `dir` is still the file open as `st` (it was not removed or replaced since).
[[nodiscard]] COTUNE_DECL bool still_linked(int dir, const std::string& name, const struct stat& st);

/// Opens the directory `name` in `dir`, creating it 0700 if it is missing. A link where the
/// directory belongs is removed (the link only, never its target) and replaced by a directory.
/// Throws std::system_error naming `shown` (the path, for messages).
[[nodiscard]] COTUNE_DECL unique_fd make_dir_at(int dir, const std::string& name, const std::filesystem::path& shown);

/// How long ago `st` was last modified, in seconds, by the real-time clock read now to the
/// nanosecond; never negative. Not `time(nullptr) - st_mtime`: since Linux 6.13 a file whose times
/// were looked at is stamped from the fine clock, which runs up to a tick ahead of the coarse one
/// `time` reads, so a file written just now could look a second younger than it is (at a second's
/// boundary) and a zero minimum age not be met (a flaky sweep). In double seconds, not integer
/// nanoseconds: compared with any `std::chrono::seconds` limit (a "never" of 10^10 s included) and
/// with any timestamp, nothing overflows.
[[nodiscard]] COTUNE_DECL std::chrono::duration<double> modified_ago(const struct stat& st) noexcept;

/// True for names of temporary files (writes in progress, or left by writers that died).
[[nodiscard]] constexpr bool is_temporary_name(std::string_view name) noexcept { return name.starts_with(".tmp."); }

/// The name of a new temporary file for `target`, naming this process as its writer (see the file comment).
[[nodiscard]] COTUNE_DECL std::string temporary_name_for(std::string_view target);

/// True when the temporary file `name` was written by a process of this host that is no longer
/// running (no process has its id and start time, or it is a zombie). False when it may be alive, when
/// it ran on another host, and when the name does not say (an older cotune's, or no /proc here).
[[nodiscard]] COTUNE_DECL bool temporary_writer_gone(std::string_view name);

/// A temporary file in `dir`, written under an exclusive lock, then renamed onto its target: readers
/// see the old file, the new one or none, never a partial one. Removed if never committed.
class temp_file_writer {
public:
  /// Creates the temporary file for `target` (a name in `dir`; `dir_shown` is its path, for messages).
  COTUNE_DECL temp_file_writer(int dir, std::string target, std::filesystem::path dir_shown);
  temp_file_writer(const temp_file_writer&) = delete;
  temp_file_writer& operator=(const temp_file_writer&) = delete;
  ~temp_file_writer() {
    if (fd_) ::unlinkat(dir_, tmp_.c_str(), 0);
  }

  [[nodiscard]] const std::string& temporary_name() const noexcept { return tmp_; }

  COTUNE_DECL void write(std::string_view data);

  /// Gives the file its final size now (a sparse file, written over from the start), so that the bytes
  /// it will hold are counted by anyone summing the directory while the write is in progress.
  COTUNE_DECL void reserve(std::uint64_t bytes);

  /// Flushes what was written to disk.
  void sync() {
    if (::fsync(fd_.get()) != 0) fail("flush");
  }

  /// Renames the file onto the target, flushing it to disk first when `flush` (otherwise a crash may
  /// leave the target empty or short, which a checksummed reader sees as a miss).
  COTUNE_DECL void commit(bool flush = true);

private:
  [[noreturn]] COTUNE_DECL void fail(const char* what) const;

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

/// Writes `parts` (concatenated) as the file `target` through a temporary file beside it (a
/// `temp_file_writer` in its directory, the current one for a bare name), flushed to disk, then a
/// rename: a reader sees the old file, the new one, or none, never a partial one.
COTUNE_DECL void atomic_write_parts(const std::filesystem::path& target, std::initializer_list<std::string_view> parts);

/// The same, for anything that converts to a string view.
template <class... Parts>
void atomic_write(const std::filesystem::path& target, const Parts&... parts) {
  atomic_write_parts(target, {std::string_view(parts)...});
}

/// Removes the temporary file `name` in `dir` if no live process holds its lock and either its writer
/// is gone (`temporary_writer_gone`) or it is at least `min_age` old; true if it was removed. `bytes`
/// receives its size.
COTUNE_DECL bool reclaim_temporary(int dir, const std::string& name, std::chrono::seconds min_age, std::uintmax_t& bytes);

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/dir_fd.ipp>
#endif
