#pragma once
/// \file The bodies of detail/files.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/detail/files.hpp>

namespace cotune::detail {

COTUNE_DECL void make_private_dirs(const std::filesystem::path& dir) {
  std::filesystem::path partial;
  for (const auto& part : dir) {
    partial /= part;
    if (partial.empty() || partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(),
                              fmt::format(COTUNE_FMT("cannot create directory '{}'"), partial.string()));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::system_error(ENOTDIR, std::generic_category(),
                            fmt::format(COTUNE_FMT("'{}' exists but is not a directory"), dir.string()));
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
        throw std::system_error(
            errno, std::generic_category(),
            fmt::format(COTUNE_FMT("cannot create a private directory '{}' (set TMPDIR to a writable place)"), tmpl));
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
  return fmt::format(COTUNE_FMT("{:016x}"), rng());
}

} // namespace cotune::detail
