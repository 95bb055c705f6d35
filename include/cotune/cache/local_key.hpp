#pragma once
/// \file `cotune::local_cache_key`: the per-user secret that turns the file cache's entry checksums
/// into MACs (HMAC-SHA256), so that an entry written by anyone without the secret is refused even
/// where the directory's permissions say nothing useful (a cache restored from a CI artifact, a
/// network file system that maps every owner to you, a volume shared with a container).
///
/// The key is the `cache.local_key` knob (COTUNE_CACHE_KEY) when set, else the content of the file
/// named by `cache.local_key_file` (COTUNE_CACHE_KEY_FILE), created on first use with 32 random bytes
/// (as hex), mode 0600, in a 0700 directory; else there is none, and entries carry a checksum only.
/// A key file is read once per process; one that others may read or write is refused.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <string>

#include <cotune/detail/config.hpp>

namespace cotune {

namespace detail {

/// Creates the key file `path` (32 random bytes as hex, 0600) unless it exists. The file appears
/// whole or not at all (written aside, then hard-linked into place, which never replaces a key that
/// a concurrent process created first).
COTUNE_DECL void create_key_file(const std::filesystem::path& path);

/// The key in `path`, creating the file if it is missing; throws cache_error if it cannot be trusted.
[[nodiscard]] COTUNE_DECL std::string read_key_file(const std::filesystem::path& path);

} // namespace detail

/// The local cache key (see the file comment), or "" when none is configured. Throws cache_error
/// when a key file is configured but cannot be made, read or trusted.
[[nodiscard]] COTUNE_DECL std::string local_cache_key();

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/cache/local_key.ipp>
#endif
