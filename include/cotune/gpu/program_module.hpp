#pragma once
/// \file What cotune learns about the file (executable or shared object) that holds a function the
/// program's build compiled: `gpu::program_module_of(address)` names the file and its build, and lists
/// the device code images nvcc embedded in it. Compiled candidates (gpu/compiled_backend.hpp) name
/// their build in every tuning-result key with it, so that a rebuilt program never reuses an old
/// build's winner, and hand an isolation worker the image that holds a candidate.
///
/// The build's identity is the file's GNU build ID (the linker's `--build-id` note, which g++ and
/// clang++ on Debian and Ubuntu emit by default): it changes with any change of code or data. A file
/// without one is named by the SHA-256 of its contents instead (read once per process).

#include <cotune/detail/config.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cotune::gpu {

/// A loaded file of the program and what it holds.
struct program_module {
  std::filesystem::path file; ///< the executable (/proc/self/exe) or the shared object
  std::string build;          ///< "build-id:1f63...", else "sha256:...": changes with every build
  /// The device code images (fat binaries) nvcc embedded, one per `.cu` file, as their bytes in memory.
  std::vector<std::string_view> fat_binaries;
};

/// The module that holds `address` (a kernel's host address), looked up once per module and kept
/// for the life of the process. Throws cotune::error when the address is in no loaded file.
[[nodiscard]] COTUNE_DECL const program_module& program_module_of(const void* address);

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/program_module.ipp>
#endif
