#pragma once
/// \file The bodies of detail/files.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/detail/files.hpp>

namespace cotune::detail {

COTUNE_DECL void make_private_dirs(const std::filesystem::path& dir) {
  std::filesystem::path partial;
  for (const auto& part : dir) {
    partial /= part;
    if (partial.empty() || partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(), fmt::format("cannot create directory '{}'", partial.string()));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::system_error(ENOTDIR, std::generic_category(), fmt::format("'{}' exists but is not a directory", dir.string()));
}

COTUNE_DECL std::optional<std::string> read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

COTUNE_DECL const std::filesystem::path& process_private_dir() {
  struct owned {
    std::filesystem::path path;
    owned() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "cotune-private-XXXXXX").string();
      if (!::mkdtemp(tmpl.data()))
        throw std::system_error(errno, std::generic_category(),
                                fmt::format("cannot create a private directory '{}' (set TMPDIR to a writable place)",
                                            tmpl));
      path = tmpl;
    }
    ~owned() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const owned dir;
  return dir.path;
}

COTUNE_DECL std::string random_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^ static_cast<std::uint64_t>(::getpid())};
  return fmt::format("{:016x}", rng());
}

COTUNE_DECL void atomic_write_parts(const std::filesystem::path& target,
                                    std::initializer_list<std::string_view> parts) {
  // The target's name is cut to 64 bytes: with a 255-byte name the temporary name would exceed
  // NAME_MAX and the write would fail.
  const auto name = target.filename().string();
  auto tmp = target.parent_path() /
             fmt::format(".tmp.{}.{}.{}", std::string_view(name).substr(0, 64), ::getpid(), random_suffix());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), fmt::format("cannot write file '{}'", tmp.string()));
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), fmt::format("cannot {} file '{}'", what, tmp.string()));
  };
  auto write_all = [&](std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  };
  for (auto part : parts) write_all(part);
  if (::fsync(fd) != 0) fail("flush");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), fmt::format("cannot close file '{}'", tmp.string()));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(),
                            fmt::format("cannot rename '{}' onto '{}'", tmp.string(), target.string()));
  }
}

} // namespace cotune::detail
