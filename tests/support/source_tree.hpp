#pragma once
/// \file Test helper: the source tree whose files a test reads (examples, the README), found at run
/// time, so that built tests keep working when the tree (sources and build) is copied elsewhere: no
/// path of the tree they were built in is compiled into them.
///
/// Header-only; include it with a relative path ("../support/source_tree.hpp").

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace cotune_test {

namespace detail {

/// Whether `dir` is cotune's source tree.
inline bool is_source_tree(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "include" / "cotune" / "cotune.hpp", ec) &&
         std::filesystem::is_regular_file(dir / "README.md", ec);
}

/// The nearest directory at or above `from` that is cotune's source tree.
inline std::optional<std::filesystem::path> tree_above(std::filesystem::path from) {
  for (; !from.empty(); from = from.parent_path()) {
    if (is_source_tree(from)) return from;
    if (from == from.parent_path()) break;
  }
  return std::nullopt;
}

} // namespace detail

/// The source tree: the one the test program lies in (a build directory inside the tree, as the
/// presets make, copied with it or not), else $COTUNE_TEST_SOURCE_DIR (which CTest sets, for a build
/// directory outside the tree), else the one the working directory lies in.
inline std::filesystem::path source_tree() {
  std::error_code ec;
  if (auto exe = std::filesystem::read_symlink("/proc/self/exe", ec); !ec)
    if (auto t = detail::tree_above(exe.parent_path())) return *t;
  if (const char* env = std::getenv("COTUNE_TEST_SOURCE_DIR"); env && detail::is_source_tree(env)) return env;
  if (auto t = detail::tree_above(std::filesystem::current_path(ec))) return *t;
  throw std::runtime_error("cannot find cotune's source tree above the test program or the working directory; "
                           "set COTUNE_TEST_SOURCE_DIR to it");
}

/// A file of the source tree, by its path relative to the tree (`examples/jobs/gemm_cuda.json`).
inline std::filesystem::path source_file(const std::filesystem::path& relative) { return source_tree() / relative; }

} // namespace cotune_test
