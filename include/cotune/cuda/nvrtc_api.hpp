#pragma once
/// \file `cotune::cuda::nvrtc_library`: NVRTC, loaded at run time with dlopen.
///
/// NVRTC compiles CUDA C++ to cubins (or PTX) in-process, with no GPU needed. Like the driver, it is
/// opened on first use, so a program built with cotune runs where the CUDA toolkit is absent.

#include <cotune/detail/config.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include <cuda.h>
#include <fmt/core.h>
#include <nvrtc.h>

#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/gpu/library_loader.hpp>
#include <cotune/gpu/rtc_output.hpp>
#include <cotune/gpu/rtc_workers.hpp>
#include <cotune/gpu/runtime_library.hpp>

// Every NVRTC function cotune calls: member name, symbol. (nvrtc.h versions no names.)
#define COTUNE_NVRTC_FUNCTIONS(X)                                                                           \
  X(version, nvrtcVersion)                                                                                  \
  X(get_error_string, nvrtcGetErrorString)                                                                  \
  X(get_num_supported_archs, nvrtcGetNumSupportedArchs)                                                     \
  X(get_supported_archs, nvrtcGetSupportedArchs)                                                            \
  X(create_program, nvrtcCreateProgram)                                                                     \
  X(destroy_program, nvrtcDestroyProgram)                                                                   \
  X(compile_program, nvrtcCompileProgram)                                                                   \
  X(get_ptx_size, nvrtcGetPTXSize)                                                                          \
  X(get_ptx, nvrtcGetPTX)                                                                                   \
  X(get_cubin_size, nvrtcGetCUBINSize)                                                                      \
  X(get_cubin, nvrtcGetCUBIN)                                                                               \
  X(get_program_log_size, nvrtcGetProgramLogSize)                                                           \
  X(get_program_log, nvrtcGetProgramLog)                                                                    \
  X(add_name_expression, nvrtcAddNameExpression)                                                            \
  X(get_lowered_name, nvrtcGetLoweredName)

namespace cotune::cuda {

/// The NVRTC functions cotune uses, resolved from libnvrtc.
struct nvrtc_api {
#define COTUNE_NVRTC_MEMBER(member, name) decltype(&::name) member = nullptr;
  COTUNE_NVRTC_FUNCTIONS(COTUNE_NVRTC_MEMBER)
#undef COTUNE_NVRTC_MEMBER
};

/// What one NVRTC compilation produced (the GPU layer's `rtc_output`: `stopped`, `crashed`, `image`...).
using nvrtc_output = gpu::rtc_output;

/// An opened libnvrtc: its function table, version, supported architectures and toolkit headers.
class nvrtc_library {
public:
  nvrtc_library(const nvrtc_library&) = delete;
  nvrtc_library& operator=(const nvrtc_library&) = delete;

  /// Opens the first of `paths` that loads and resolves every function; sets `why` otherwise.
  [[nodiscard]] static std::unique_ptr<nvrtc_library> open(const std::vector<std::string>& paths, std::string& why);

  [[nodiscard]] const nvrtc_api& api() const noexcept { return api_; }
  /// The dlopen handle (for looking up functions cotune does not use).
  [[nodiscard]] void* handle() const noexcept { return handle_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int major() const noexcept { return major_; }
  [[nodiscard]] int minor() const noexcept { return minor_; }
  /// "13.0".
  [[nodiscard]] std::string version_text() const { return fmt::format("{}.{}", major_, minor_); }
  /// Compute capabilities NVRTC can target, as 10 * major + minor (90 is sm_90).
  [[nodiscard]] const std::vector<int>& supported_archs() const noexcept { return archs_; }
  [[nodiscard]] bool supports(int arch) const {
    return archs_.empty() || std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
  }
  /// The CUDA toolkit's include directory matching this NVRTC (for <cuda_fp16.h> and friends), or
  /// empty if none was found.
  [[nodiscard]] const std::filesystem::path& toolkit_include_dir() const noexcept { return include_dir_; }
  /// Compiles `source` with `options`, registering `name_expression` and returning its lowered
  /// name. Thread-safe. With the `cuda.compile_processes` knob on (the default), the compilation runs
  /// in a warm compile process (gpu/rtc_workers.hpp): compiles then run in parallel, and one still
  /// running past `deadline` or when `stop` is requested is killed (`stopped` says which). In-process,
  /// NVRTC serialises much of its work between threads and cannot be interrupted.
  [[nodiscard]] nvrtc_output compile(const std::string& source, const std::string& file_name,
                                     const std::vector<std::string>& options, const std::string& name_expression,
                                     std::chrono::steady_clock::time_point deadline =
                                         std::chrono::steady_clock::time_point::max(),
                                     std::stop_token stop = {}) const {
    return workers_.compile(gpu::rtc_request{source, file_name, options, name_expression}, deadline, std::move(stop),
                            cuda_knobs().compile_processes.get(), compile_workers());
  }

  /// How many compilations this process has run (a warm start runs none).
  [[nodiscard]] std::uint64_t compilations() const noexcept { return workers_.compilations(); }
  /// How many of compilations() ran in compile processes.
  [[nodiscard]] std::uint64_t process_compilations() const noexcept { return workers_.process_compilations(); }
  /// How many ran in a warm compile process (one that had compiled before, or was warmed up).
  [[nodiscard]] std::uint64_t warm_compilations() const { return workers_.warm_compilations(); }
  /// Warm compile processes alive now.
  [[nodiscard]] std::size_t warm_processes() const { return workers_.warm_processes(); }

  /// Starts the compile server and its warm compile processes now (if the `cuda.compile_processes`
  /// knob is on and none runs yet), rather than at the first compile. The server is a fork of this
  /// process, and so are its processes: from a server forked out of a process holding 2 GB, a GEMM
  /// compile took 316-431 ms against 187-270 ms from one forked before the 2 GB were allocated (build
  /// machine, 2026-11-30, one fork per compile). A program that will hold many GB when it first
  /// compiles can call this first, from its main thread. (Started from preload_nvrtc's thread during
  /// the driver's start-up, 16 concurrent compiles were slower on the H200 host, 1.40-1.54 s against
  /// 1.04-1.08 s for a server forked at the first compile, so the library does not do that by
  /// itself.) Returns whether a server runs.
  bool start_compile_server() const {
    return cuda_knobs().compile_processes.get() && workers_.start(compile_workers());
  }

  /// The compile server's pid, or -1 if none has been started (for tests).
  [[nodiscard]] pid_t compile_server_pid() const { return workers_.server_pid(); }

  /// Warnings about how compiles run (the compile server could not start or was lost) since the last
  /// call: the tuner reports them as `tuning_warning` events (through `cuda_backend::take_warnings`).
  [[nodiscard]] std::vector<std::string> take_warnings() const { return workers_.take_warnings(); }

  /// For gpu::rtc_workers: messages name the compiler.
  static constexpr const char* rtc_name = "NVRTC";

  /// Compiles in this process, on the calling thread (gpu::rtc_workers calls it here or in a compile
  /// process).
  [[nodiscard]] nvrtc_output compile_here(const gpu::rtc_request& r) const {
    return compile_here(r.source, r.file_name, r.options, r.name_expression);
  }

  /// NVRTC's first compile in a process pays a set-up (a tiny kernel: 79 ms first, 31-39 ms after,
  /// build machine); the compile server pays it once, before forking its compile processes.
  void warm_up() const {
    (void)compile_here("extern \"C\" __global__ void cotune_warm_up() {}\n", "cotune_warm_up.cu", {}, "cotune_warm_up");
  }

private:
  static std::size_t compile_workers() {
    const int n = cuda_knobs().compile_workers.get();
    return n > 0 ? static_cast<std::size_t>(n) : gpu::default_compile_workers();
  }

  /// Compiles in this process, on the calling thread.
  [[nodiscard]] nvrtc_output compile_here(const std::string& source, const std::string& file_name,
                                          const std::vector<std::string>& options,
                                          const std::string& name_expression) const;

  nvrtc_library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  /// Resolves every function of the list from `handle` into `lib`; returns the symbols it lacks. Its body
  /// is the list, expanded here, where the list is defined (the header undefines it at its end).
  static std::string resolve(nvrtc_library& lib, void* handle) {
    std::string missing;
#define COTUNE_NVRTC_RESOLVE(member, name)                                                                  \
  lib.api_.member = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));                            \
  if (!lib.api_.member) gpu::add_missing(missing, #name);
    COTUNE_NVRTC_FUNCTIONS(COTUNE_NVRTC_RESOLVE)
#undef COTUNE_NVRTC_RESOLVE
    return missing;
  }

  /// `<lib>/../include` beside the loaded library (as the loader found it, then with links resolved),
  /// then $CUDA_HOME, $CUDA_PATH and /usr/local/cuda; the first that holds cuda_fp16.h.
  static std::filesystem::path find_toolkit_include_dir(void* handle);

  void* handle_; // never closed: compiled programs' code may still reference it
  std::string path_;
  nvrtc_api api_{};
  int major_ = 0;
  int minor_ = 0;
  std::vector<int> archs_;
  std::filesystem::path include_dir_;
  gpu::rtc_workers<nvrtc_library> workers_{*this}; ///< never destroyed (the library never is)
};

namespace detail {

using nvrtc_entry = gpu::library_entry<nvrtc_library>;

/// Where to look for NVRTC: the knob's path alone when set; else the soname of the toolkit cotune
/// was built against, the unversioned name, then $CUDA_HOME/lib64, $CUDA_PATH/lib64 and
/// /usr/local/cuda/lib64 (where the toolkit installs it, often not on the loader's path).
[[nodiscard]] COTUNE_DECL std::vector<std::string> nvrtc_search_paths();

/// The entry for the paths the knobs name now. The key is a named local: a call with a temporary
/// argument that returns a reference makes g++ 13 warn (-Wdangling-reference), although the entry
/// lives in a function-local static table.
[[nodiscard]] COTUNE_DECL const nvrtc_entry& current_nvrtc_entry();

} // namespace detail

/// Starts opening NVRTC on a background thread, once per process. Opening it costs about 5 ms
/// (15 ms from a cold page cache; measured on this project's build machine: libnvrtc.so.13 is 104 MiB
/// with 4.8 MB of relocations), which would otherwise sit between a warm start's driver
/// initialisation and its first launch, since every cache key holds NVRTC's version. The CUDA backend
/// has this called when the driver opens, so the load overlaps with cuInit and context creation.
COTUNE_DECL void preload_nvrtc();

/// NVRTC as the `cuda.libnvrtc_path` knob says, or nullptr (`nvrtc_error()` says why).
[[nodiscard]] COTUNE_DECL const nvrtc_library* try_nvrtc();

/// Why `try_nvrtc()` is null (empty when NVRTC loaded).
[[nodiscard]] COTUNE_DECL std::string nvrtc_error();

/// NVRTC; throws cotune::error with the reason when it cannot be loaded.
[[nodiscard]] COTUNE_DECL const nvrtc_library& nvrtc();

} // namespace cotune::cuda

#undef COTUNE_NVRTC_FUNCTIONS

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/nvrtc_api.ipp>
#endif
