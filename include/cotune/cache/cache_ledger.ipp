#pragma once
/// \file The bodies of cache/cache_ledger.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/cache/cache_ledger.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

namespace ledger_detail {

/// Names go into the ledger in hex: a cache file name may hold spaces and newlines.
[[nodiscard]] COTUNE_DECL std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0 || !is_hex(hex)) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  }
  return out;
}

[[nodiscard]] COTUNE_DECL std::string to_hex_text(std::string_view s) {
  return to_hex(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

} // namespace ledger_detail

COTUNE_DECL cache_ledger::cache_ledger(int root, const std::filesystem::path& root_shown) {
  const auto shown = (root_shown / file_name).string();
  fd_ = unique_fd(::openat(root, file_name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd_ && (errno == EROFS || errno == EACCES)) {
    // A cache that cannot be written still has its lock: readers and gc go on, and `save` does nothing.
    fd_ = unique_fd(::openat(root, file_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    read_only_ = true;
  }
  if (!fd_)
    throw std::system_error(errno, std::generic_category(),
                            fmt::format(COTUNE_FMT("cannot open the cache's ledger '{}'"), shown));
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw std::system_error(EEXIST, std::generic_category(),
                            fmt::format(COTUNE_FMT("the cache's ledger '{}' is not a regular file; remove it"), shown));
  while (::flock(fd_.get(), LOCK_EX) != 0)
    if (errno != EINTR)
      throw std::system_error(errno, std::generic_category(),
                              fmt::format(COTUNE_FMT("cannot lock the cache's ledger '{}'"), shown));
  const auto text = read_all(fd_.get(), 4096);
  if (!text) return;
  // "cotune-ledger 1\nbytes N|?\nwritten N\nw <hex dir> <hex temporary> N\n...": anything else is torn.
  std::istringstream in(*text);
  std::string word, total;
  std::uint64_t written_now = 0;
  if (!(in >> word) || word != "cotune-ledger" || !(in >> word) || word != "1") return;
  if (!(in >> word) || word != "bytes" || !(in >> total) || !(in >> word) || word != "written" || !(in >> written_now))
    return;
  std::vector<in_flight> listed;
  while (in >> word) {
    std::string dir, tmp;
    std::uint64_t n = 0;
    if (word != "w" || !(in >> dir >> tmp >> n)) return;
    auto d = ledger_detail::from_hex(dir), t = ledger_detail::from_hex(tmp);
    if (!d || !t || !is_temporary_name(*t)) return;
    listed.push_back({std::move(*d), std::move(*t), n});
  }
  if (total != "?") {
    char* end = nullptr;
    const auto n = std::strtoull(total.c_str(), &end, 10);
    if (total.empty() || *end != '\0') return;
    bytes = n;
  }
  written = written_now;
  writes = std::move(listed);
}

COTUNE_DECL cache_ledger::~cache_ledger() {
  if (fd_) ::flock(fd_.get(), LOCK_UN);
}

COTUNE_DECL void cache_ledger::add(std::int64_t delta) noexcept {
  if (!bytes) return;
  if (delta < 0 && static_cast<std::uint64_t>(-delta) > *bytes) *bytes = 0;
  else *bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(*bytes) + delta);
}

COTUNE_DECL void cache_ledger::reclaim_dead_writes(int root) {
  std::vector<in_flight> kept;
  for (auto& w : writes) {
    const auto dir = open_dir_at(root, w.dir);
    struct stat st {};
    const bool there = dir && ::fstatat(dir.get(), w.temporary.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    std::uintmax_t removed = 0;
    if (!there || (temporary_writer_gone(w.temporary) &&
                   reclaim_temporary(dir.get(), w.temporary, std::chrono::seconds::max(), removed)))
      add(-static_cast<std::int64_t>(w.bytes));
    else kept.push_back(std::move(w));
  }
  writes = std::move(kept);
}

COTUNE_DECL void cache_ledger::save() noexcept {
  if (read_only_) return;
  try {
    std::string text = fmt::format(COTUNE_FMT("cotune-ledger 1\nbytes {}\nwritten {}\n"),
                                   bytes ? std::to_string(*bytes) : "?", written);
    for (const auto& w : writes)
      text += fmt::format(COTUNE_FMT("w {} {} {}\n"), ledger_detail::to_hex_text(w.dir),
                          ledger_detail::to_hex_text(w.temporary), w.bytes);
    // Written over in place, then cut to length: never truncated to zero first, which on ext4 makes the
    // close flush the file to disk (auto_da_alloc: 4-8 ms a put, measured, instead of microseconds).
    std::string_view rest = text;
    for (off_t at = 0; !rest.empty();) {
      const ssize_t n = ::pwrite(fd_.get(), rest.data(), rest.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
      at += n;
    }
    // A shorter text leaves stale bytes past its end: cut them. If that fails, the next reader takes the
    // tail for a torn ledger (it recounts, as for a lost one) or for writes it then finds gone.
    if (::ftruncate(fd_.get(), static_cast<off_t>(text.size())) != 0) return;
  } catch (...) {
    // see the declaration
  }
}

} // namespace cotune::detail
