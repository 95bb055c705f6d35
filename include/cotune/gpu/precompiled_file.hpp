#pragma once
/// \file `cotune::gpu::precompiled_file`: GPU kernels built ahead of time (by nvcc or hipcc, through the
/// CMake function `cotune_precompile` and `cotune precompile`), one file a program ships. The GPU
/// backend (gpu/rtc_backend.hpp) loads a candidate from it instead of calling its runtime compiler
/// when the file holds an entry made from exactly what the runtime would compile: the same kernel
/// (name, source, entry, options, include directories), config and compile options, for the same
/// architecture. docs/cuda.md, "Ahead-of-time compilation", describes the whole path.
///
/// The file: one header line `cotune-precompiled 1 <index bytes> <index sha256>`, the index (JSON:
/// each entry's kernel, config, architecture, recipe digest, symbol, compiler, log and the offset,
/// size and sha256 of its image), then the images. Reading checks the header, the index's digest and
/// every image's digest: a damaged or foreign file is refused whole, with the reason, never half read.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/detail/config.hpp>

namespace cotune::gpu {

/// One kernel of a precompiled file, built for one config and one architecture.
struct precompiled_entry {
  std::string kernel;       ///< kernel_source::name
  std::string config;       ///< config::text()
  std::string arch;         ///< what it was built for: "sm_90", "gfx90a"
  std::string recipe;       ///< precompiled_recipe(): what it was made from (hex)
  std::string lowered_name; ///< the entry's symbol in the image (mangled for a C++ kernel)
  std::string compiler;     ///< "nvcc 13.0", "hipcc 5.2"
  bool ok = true;           ///< false: the compiler refused this config (`log` says why; no image)
  std::string log;          ///< the compiler's output
  std::string image;        ///< the cubin or code object

  friend bool operator==(const precompiled_entry&, const precompiled_entry&) = default;
};

/// What an entry is made from, as a hex digest: the kernel's digest (name, source, entry, options,
/// include directories), the config's canonical text and every compile option other than the
/// architecture flag (the config's macros, the compiler-options knob's, ...). The build and the
/// runtime compute it from the same code (the backend's `precompiled_options`).
[[nodiscard]] COTUNE_DECL std::string precompiled_recipe(const kernel_source& k, const config& c,
                                                         const std::vector<std::string>& options);

/// True when an entry built for `entry_arch` runs on a device whose target is `target`: the same
/// name, or (AMD) an entry for the bare processor ("gfx90a") on any of its feature settings
/// ("gfx90a:sramecc+:xnack-").
[[nodiscard]] COTUNE_DECL bool precompiled_arch_matches(std::string_view entry_arch, std::string_view target);

/// A file that is not a readable precompiled file (missing, truncated, damaged, foreign, a newer format).
class precompiled_file_error : public error {
public:
  using error::error;
};

/// A precompiled file, read and checked whole.
class precompiled_file {
public:
  /// The format this cotune writes and reads.
  static constexpr int format_version = 1;

  /// Reads and checks `path`. Throws precompiled_file_error naming the file and what is wrong with it.
  [[nodiscard]] COTUNE_DECL static precompiled_file read(const std::filesystem::path& path);

  /// `read(path)` once per process (later calls share it; a file that could not be read is refused
  /// again with the same error, without reading it again). Thread-safe.
  [[nodiscard]] COTUNE_DECL static const precompiled_file& shared(const std::filesystem::path& path);

  /// Writes `entries` to `path` (a temporary file beside it, then a rename). Throws cotune::error.
  COTUNE_DECL static void write(const std::filesystem::path& path, const std::vector<precompiled_entry>& entries);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// SHA-256 (hex) of the whole file: names the build of the binaries in result-cache keys.
  [[nodiscard]] const std::string& digest() const noexcept { return digest_; }
  [[nodiscard]] const std::vector<precompiled_entry>& entries() const noexcept { return entries_; }

  /// The entry of `kernel` under config text `config` for `target` (an exact architecture first,
  /// then its processor), or null.
  [[nodiscard]] COTUNE_DECL const precompiled_entry* find(std::string_view kernel, std::string_view config,
                                                          std::string_view target) const;

private:
  std::filesystem::path path_;
  std::string digest_;
  std::vector<precompiled_entry> entries_;
};

/// How a GPU backend uses its precompiled file (the knob runtime.precompiled, COTUNE_PRECOMPILED).
enum class precompiled_mode { off, prefer, only };

/// The knob's value; `off` when no file is named (runtime.precompiled_file, COTUNE_PRECOMPILED_FILE).
[[nodiscard]] COTUNE_DECL precompiled_mode current_precompiled_mode();

/// Warnings about precompiled files (an unreadable file, an entry made from something else) since the
/// last call; each is said once per process. The GPU backends report them as tuning warnings.
[[nodiscard]] COTUNE_DECL std::vector<std::string> take_precompiled_warnings();

/// Adds a warning for `take_precompiled_warnings` (once per distinct text).
COTUNE_DECL void warn_precompiled(std::string text);

/// The symbol of a kernel entry in an ELF image (a cubin, an AMD code object): `entry` itself (an
/// `extern "C"` kernel), else the one function symbol whose C++ mangling names it (`_Z3addPfi` for
/// `add`, `_Z4gemmILi64EEvPf` for a name expression `gemm<64>`). Nothing when there is none or more
/// than one; `why` then says which.
[[nodiscard]] COTUNE_DECL std::optional<std::string> elf_kernel_symbol(std::string_view image, std::string_view entry,
                                                                       std::string* why = nullptr);

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/precompiled_file.ipp>
#endif
