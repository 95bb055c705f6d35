#pragma once
/// \file The bodies of detail/dir_fd.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/detail/dir_fd.hpp>

namespace cotune::detail {

namespace proc_detail {

/// A process as /proc/<pid>/stat shows it: its state letter and its start time (clock ticks after boot).
struct proc_stat {
  char state = '?';
  unsigned long long start = 0;
};

/// /proc/<pid>/stat read, or nothing when there is no such process (or no /proc).
COTUNE_DECL std::optional<proc_stat> read_proc_stat(const std::string& pid) {
  const unique_fd fd(::open(fmt::format(COTUNE_FMT("/proc/{}/stat"), pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  auto text = read_all(fd.get(), 512);
  if (!text) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields after the last ')'
  // are plain. The start time is field 22, the 20th after comm.
  const auto close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  proc_stat s;
  std::size_t at = close + 1;
  for (int field = 3; field <= 22; ++field) {
    while (at < text->size() && (*text)[at] == ' ') ++at;
    const auto end = text->find(' ', at);
    const std::string_view token = std::string_view(*text).substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (token.empty()) return std::nullopt;
    if (field == 3) s.state = token[0];
    if (field == 22) s.start = std::strtoull(std::string(token).c_str(), nullptr, 10);
    at = end == std::string::npos ? text->size() : end;
  }
  return s;
}

/// This host's name, as it goes into temporary names: '@', '/' and anything but [A-Za-z0-9._-] become
/// '_', cut to 64 bytes.
COTUNE_DECL const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || !*name) return std::string("unknown-host");
    std::string out;
    for (const char* c = name; *c && out.size() < 64; ++c) {
      const bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                         *c == '.' || *c == '-' || *c == '_';
      out += plain ? *c : '_';
    }
    return out;
  }();
  return tag;
}

/// This process's start time (0 when /proc cannot say), read once per process (a forked child reads its own).
COTUNE_DECL unsigned long long own_start_time() {
  thread_local pid_t pid = 0;
  thread_local unsigned long long start = 0;
  if (pid != ::getpid()) {
    pid = ::getpid();
    const auto s = read_proc_stat("self");
    start = s ? s->start : 0;
  }
  return start;
}

} // namespace proc_detail

COTUNE_DECL std::string temporary_name_for(std::string_view target) {
  using namespace proc_detail;
  // The target's name is cut to 64 bytes: with a 255-byte name the temporary name would exceed NAME_MAX
  // (5 + 64 + 17 + 33 + 65 bytes at most).
  return fmt::format(COTUNE_FMT(".tmp.{}.{}.w{}-{}@{}"), target.substr(0, 64), random_suffix(), ::getpid(),
                     own_start_time(), host_tag());
}

COTUNE_DECL bool temporary_writer_gone(std::string_view name) {
  using namespace proc_detail;
  if (!is_temporary_name(name)) return false;
  const auto at = name.rfind('@');
  if (at == std::string_view::npos || name.substr(at + 1) != host_tag()) return false;
  const auto dot = name.rfind('.', at);
  const auto dash = name.rfind('-', at);
  if (dot == std::string_view::npos || dash == std::string_view::npos || dash < dot || name.substr(dot + 1, 1) != "w")
    return false;
  const std::string pid(name.substr(dot + 2, dash - dot - 2));
  const std::string start(name.substr(dash + 1, at - dash - 1));
  if (pid.empty() || start.empty() || pid.find_first_not_of("0123456789") != std::string::npos ||
      start.find_first_not_of("0123456789") != std::string::npos || start == "0")
    return false;
  if (own_start_time() == 0) return false; // no /proc here: nothing can be told
  const auto s = read_proc_stat(pid);
  if (!s) return true; // no such process
  return s->start != std::strtoull(start.c_str(), nullptr, 10) || s->state == 'Z' || s->state == 'X';
}

COTUNE_DECL unique_fd open_dir(const std::filesystem::path& path) {
  return unique_fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

COTUNE_DECL unique_fd open_dir_at(int dir, const std::string& name) {
  return unique_fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

COTUNE_DECL std::optional<opened_file> open_file_at(int dir, const std::string& name) {
  opened_file f{unique_fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)), {}};
  if (!f.fd) return std::nullopt;
  if (::fstat(f.fd.get(), &f.st) != 0 || !S_ISREG(f.st.st_mode)) return std::nullopt;
  return f;
}

COTUNE_DECL std::optional<std::string> read_all(int fd, std::size_t size_hint) {
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

COTUNE_DECL bool still_linked(int dir, const std::string& name, const struct stat& st) {
  struct stat now {};
  return ::fstatat(dir, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
         now.st_ino == st.st_ino;
}

COTUNE_DECL unique_fd make_dir_at(int dir, const std::string& name, const std::filesystem::path& shown) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::mkdirat(dir, name.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(),
                              fmt::format(COTUNE_FMT("cannot create directory '{}'"), shown.string()));
    if (auto fd = open_dir_at(dir, name)) return fd;
    const int err = errno;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      ::unlinkat(dir, name.c_str(), 0);
      continue;
    }
    if (err == ENOENT) continue; // removed by a concurrent gc between mkdirat and openat
    throw std::system_error(
        err, std::generic_category(),
        fmt::format(COTUNE_FMT("cannot open directory '{}' (remove what is there)"), shown.string()));
  }
  throw std::system_error(
      EEXIST, std::generic_category(),
      fmt::format(COTUNE_FMT("cannot create directory '{}': it keeps being replaced"), shown.string()));
}

COTUNE_DECL temp_file_writer::temp_file_writer(int dir, std::string target, std::filesystem::path dir_shown)
    : dir_(dir), target_(std::move(target)), shown_(std::move(dir_shown)) {
  for (int attempt = 0;; ++attempt) {
    // The target's name is cut to 64 bytes: with a 255-byte name the temporary name would exceed NAME_MAX.
    tmp_ = temporary_name_for(target_);
    fd_ = unique_fd(::openat(dir_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_)
      throw std::system_error(errno, std::generic_category(),
                              fmt::format(COTUNE_FMT("cannot write file '{}'"), (shown_ / tmp_).string()));
    ::flock(fd_.get(), LOCK_EX); // see the file comment; a failure (no flock here) leaves the age rule
    // A reclaimer may have taken the file between its creation and the lock: then it is gone; retry.
    struct stat st {};
    if (::fstat(fd_.get(), &st) == 0 && st.st_nlink > 0) break;
    fd_.reset();
    if (attempt == 3)
      throw std::system_error(
          ENOENT, std::generic_category(),
          fmt::format(COTUNE_FMT("cannot write file '{}': it keeps being removed"), (shown_ / tmp_).string()));
  }
}

COTUNE_DECL void temp_file_writer::write(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_.get(), data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

COTUNE_DECL void temp_file_writer::reserve(std::uint64_t bytes) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(bytes)) != 0) fail("reserve space for");
}

COTUNE_DECL void temp_file_writer::commit(bool flush) {
  if (flush) sync();
  if (::renameat(dir_, tmp_.c_str(), dir_, target_.c_str()) != 0) {
    const int err = errno;
    throw std::system_error(
        err, std::generic_category(),
        fmt::format(COTUNE_FMT("cannot rename '{}' onto '{}'"), (shown_ / tmp_).string(), (shown_ / target_).string()));
  }
  fd_.reset(); // closing drops the lock; the file now has its final name
}

[[noreturn]] COTUNE_DECL void temp_file_writer::fail(const char* what) const {
  throw std::system_error(errno, std::generic_category(),
                          fmt::format(COTUNE_FMT("cannot {} file '{}'"), what, (shown_ / tmp_).string()));
}

COTUNE_DECL void atomic_write_parts(const std::filesystem::path& target,
                                    std::initializer_list<std::string_view> parts) {
  // O_PATH: the directory is only named in the *at calls, so it needs no read permission.
  const auto parent = target.parent_path();
  const unique_fd dir(::open(parent.empty() ? "." : parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir)
    throw std::system_error(
        errno, std::generic_category(),
        fmt::format(COTUNE_FMT("cannot write file '{}': cannot open its directory"), target.string()));
  temp_file_writer w(dir.get(), target.filename().string(), parent);
  for (auto part : parts) w.write(part);
  w.commit(true);
}

COTUNE_DECL std::chrono::duration<double> modified_ago(const struct stat& st) noexcept {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const double s = static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
                   static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) * 1e-9;
  return std::chrono::duration<double>(s > 0 ? s : 0); // a timestamp from the future (another host's clock) is new
}

COTUNE_DECL bool reclaim_temporary(int dir, const std::string& name, std::chrono::seconds min_age, std::uintmax_t& bytes) {
  if (!is_temporary_name(name)) return false;
  const unique_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (modified_ago(st) < min_age && !temporary_writer_gone(name)) return false;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false; // a live writer holds it
  if (!still_linked(dir, name, st)) return false;
  if (::unlinkat(dir, name.c_str(), 0) != 0) return false;
  bytes = static_cast<std::uintmax_t>(st.st_size);
  return true;
}

} // namespace cotune::detail
