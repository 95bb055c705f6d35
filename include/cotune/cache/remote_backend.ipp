#pragma once
/// \file The bodies of cache/remote_backend.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cache/remote_backend.hpp>

namespace cotune::detail {

COTUNE_DECL std::string shown_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F)
      out += fmt::format(COTUNE_FMT("\\x{:02x}"), u);
    else out.push_back(c);
  }
  return out;
}

} // namespace cotune::detail
namespace cotune {

COTUNE_DECL void validate_remote_prefix(std::string_view prefix) {
  if (!is_valid_remote_prefix(prefix))
    throw cache_error(
        fmt::format(COTUNE_FMT("remote key prefix '{}' is refused: use 1 to 64 characters of [A-Za-z0-9_.-] "
                               "(set COTUNE_REDIS_PREFIX accordingly)"),
                    detail::shown_name(prefix)));
}

COTUNE_DECL void validate_remote_key(std::string_view key) {
  if (!detail::is_hex(key) || key.size() > 128)
    throw cache_error(
        fmt::format(COTUNE_FMT("remote cache key '{}' is refused: a key must be a lower-case hex digest of at "
                               "most 128 digits"),
                    detail::shown_name(key)));
}

COTUNE_DECL void validate_remote_file_name(std::string_view name) {
  validate_cache_file_name(name);
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ':' || c == ' ' || u < 0x20 || u == 0x7F)
      throw cache_error(
          fmt::format(COTUNE_FMT("remote cache file name '{}' is refused: a remote name may not hold ':', "
                                 "spaces or control characters"),
                      detail::shown_name(name)));
  }
}

COTUNE_DECL std::string remote_key(std::string_view prefix, std::string_view key, std::string_view name) {
  validate_remote_prefix(prefix);
  validate_remote_key(key);
  validate_remote_file_name(name);
  std::string out;
  out.reserve(prefix.size() + key.size() + name.size() + 2);
  out.append(prefix).append(":").append(key).append(":").append(name);
  return out;
}

} // namespace cotune
