#pragma once
/// \file File helpers: private directories, whole-file reads (atomic writes: detail/dir_fd.hpp). A failed call throws
/// std::system_error naming the path (the cache layer turns it into a cache_error with the fix).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <cotune/detail/config.hpp>

namespace cotune::detail {

/// Creates `dir` and its missing parents with mode 0700 (existing ones are left as they are).
COTUNE_DECL void make_private_dirs(const std::filesystem::path& dir);

/// The whole file, or nothing if it cannot be read or is not a regular file (a directory or a FIFO
/// planted in a cache directory is a miss: O_NONBLOCK keeps a FIFO from blocking the open).
[[nodiscard]] COTUNE_DECL std::optional<std::string> read_file(const std::filesystem::path& path);

/// A directory private to this process (0700, under $TMPDIR or /tmp), made on first use and removed
/// with everything in it when the process exits: where binaries go when the cache cannot take them
/// (a shared object that is dlopen'ed stays mapped after its file is removed).
[[nodiscard]] COTUNE_DECL const std::filesystem::path& process_private_dir();

/// A random hex suffix for temporary names.
[[nodiscard]] COTUNE_DECL std::string random_suffix();

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/files.ipp>
#endif
