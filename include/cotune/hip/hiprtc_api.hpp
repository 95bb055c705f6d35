#pragma once
/// \file `cotune::hip::hiprtc_library`: hiprtc, loaded at run time with dlopen.
///
/// hiprtc compiles HIP C++ into AMD GPU code objects for an explicit architecture
/// (`--offload-arch=gfx90a`), with no GPU needed. HIP 5 builds it into libamdhip64; ROCm 6 ships it
/// as libhiprtc.so.6. Compiles run in warm compile processes (gpu/rtc_workers.hpp), as NVRTC's do.

#include <cotune/detail/config.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <type_traits>
#include <vector>

#include <dlfcn.h>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/gpu/library_loader.hpp>
#include <cotune/gpu/rtc_output.hpp>
#include <cotune/gpu/rtc_workers.hpp>
#include <cotune/gpu/runtime_library.hpp>
#include <cotune/hip/hip_knobs.hpp>

namespace cotune::hip {

using hiprtc_result = int;       ///< hiprtcResult
using hiprtc_program = void*;    ///< hiprtcProgram
inline constexpr hiprtc_result hiprtc_success = 0;

/// Every hiprtc function cotune calls: member, hiprtc name, cotune's type for it.
#define COTUNE_HIPRTC_FUNCTIONS(X)                                                                         \
  X(version, hiprtcVersion, hiprtc_result(int*, int*))                                                     \
  X(get_error_string, hiprtcGetErrorString, const char*(hiprtc_result))                                    \
  X(create_program, hiprtcCreateProgram,                                                                   \
    hiprtc_result(hiprtc_program*, const char*, const char*, int, const char**, const char**))             \
  X(destroy_program, hiprtcDestroyProgram, hiprtc_result(hiprtc_program*))                                 \
  X(compile_program, hiprtcCompileProgram, hiprtc_result(hiprtc_program, int, const char**))               \
  X(get_code_size, hiprtcGetCodeSize, hiprtc_result(hiprtc_program, std::size_t*))                         \
  X(get_code, hiprtcGetCode, hiprtc_result(hiprtc_program, char*))                                         \
  X(get_program_log_size, hiprtcGetProgramLogSize, hiprtc_result(hiprtc_program, std::size_t*))            \
  X(get_program_log, hiprtcGetProgramLog, hiprtc_result(hiprtc_program, char*))                            \
  X(add_name_expression, hiprtcAddNameExpression, hiprtc_result(hiprtc_program, const char*))              \
  X(get_lowered_name, hiprtcGetLoweredName, hiprtc_result(hiprtc_program, const char*, const char**))

/// The hiprtc functions cotune uses.
struct hiprtc_api {
#define COTUNE_HIPRTC_MEMBER(member, name, type) std::add_pointer_t<type> member = nullptr;
  COTUNE_HIPRTC_FUNCTIONS(COTUNE_HIPRTC_MEMBER)
#undef COTUNE_HIPRTC_MEMBER
};

/// An opened hiprtc: its function table and version; compiles in warm compile processes.
class hiprtc_library {
public:
  hiprtc_library(const hiprtc_library&) = delete;
  hiprtc_library& operator=(const hiprtc_library&) = delete;

  /// Opens the first of `paths` that loads and resolves every function; sets `why` otherwise.
  [[nodiscard]] static std::unique_ptr<hiprtc_library> open(const std::vector<std::string>& paths, std::string& why);

  [[nodiscard]] const hiprtc_api& api() const noexcept { return api_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int major() const noexcept { return major_; }
  [[nodiscard]] int minor() const noexcept { return minor_; }
  /// "5.2".
  [[nodiscard]] std::string version_text() const { return fmt::format("{}.{}", major_, minor_); }

  /// Compiles `source` with `options` (which must name the target, `--offload-arch=gfx90a`),
  /// registering `name_expression`. Thread-safe. With the `hip.compile_processes` knob on (the
  /// default), in a warm compile process that a deadline or `stop` kills midway.
  [[nodiscard]] gpu::rtc_output compile(const std::string& source, const std::string& file_name,
                                        const std::vector<std::string>& options, const std::string& name_expression,
                                        std::chrono::steady_clock::time_point deadline =
                                            std::chrono::steady_clock::time_point::max(),
                                        std::stop_token stop = {}) const {
    return workers_.compile(gpu::rtc_request{source, file_name, options, name_expression}, deadline, std::move(stop),
                            hip_knobs().compile_processes.get(), compile_workers());
  }

  [[nodiscard]] std::uint64_t compilations() const noexcept { return workers_.compilations(); }
  [[nodiscard]] std::uint64_t process_compilations() const noexcept { return workers_.process_compilations(); }
  [[nodiscard]] std::uint64_t warm_compilations() const { return workers_.warm_compilations(); }
  [[nodiscard]] std::size_t warm_processes() const { return workers_.warm_processes(); }
  /// Starts the compile server and its warm processes now (see cuda::nvrtc_library::start_compile_server).
  bool start_compile_server() const { return hip_knobs().compile_processes.get() && workers_.start(compile_workers()); }
  [[nodiscard]] pid_t compile_server_pid() const { return workers_.server_pid(); }
  [[nodiscard]] std::vector<std::string> take_warnings() const { return workers_.take_warnings(); }

  /// For gpu::rtc_workers.
  static constexpr const char* rtc_name = "hiprtc";

  /// Compiles in this process, on the calling thread.
  [[nodiscard]] gpu::rtc_output compile_here(const gpu::rtc_request& r) const;

  /// hiprtc's first compile in a process loads and sets up its compiler; the compile server pays it
  /// once, before forking its compile processes.
  void warm_up() const {
    (void)compile_here({"extern \"C\" __global__ void cotune_warm_up() {}\n", "cotune_warm_up.hip",
                        {"--offload-arch=gfx90a"}, "cotune_warm_up"});
  }

private:
  hiprtc_library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  static std::size_t compile_workers() {
    const int n = hip_knobs().compile_workers.get();
    return n > 0 ? static_cast<std::size_t>(n) : gpu::default_compile_workers();
  }

  [[maybe_unused]] void* handle_; // never closed (clang 14 calls it unused in a file that defines every member it sees)
  std::string path_;
  hiprtc_api api_{};
  int major_ = 0;
  int minor_ = 0;
  gpu::rtc_workers<hiprtc_library> workers_{*this};
};

namespace detail {

using hiprtc_entry = gpu::library_entry<hiprtc_library>;

/// The knob's path alone when set; else libhiprtc.so.6, .so.5, then the HIP runtime's libraries
/// (HIP 5 builds hiprtc into libamdhip64), then ROCm's default prefix.
[[nodiscard]] COTUNE_DECL std::vector<std::string> hiprtc_search_paths();

/// The entry for the paths the knobs name now. The key is a named local: a call with a temporary
/// argument that returns a reference makes g++ 13 warn (-Wdangling-reference), although the entry
/// lives in a function-local static table.
[[nodiscard]] COTUNE_DECL const hiprtc_entry& current_hiprtc_entry();

} // namespace detail

/// hiprtc as the `hip.libhiprtc_path` knob says, or nullptr (`hiprtc_error()` says why).
[[nodiscard]] COTUNE_DECL const hiprtc_library* try_hiprtc();

/// Why `try_hiprtc()` is null (empty when hiprtc loaded).
[[nodiscard]] COTUNE_DECL std::string hiprtc_error();

/// hiprtc; throws cotune::error with the reason when it cannot be loaded.
[[nodiscard]] COTUNE_DECL const hiprtc_library& hiprtc();

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/hiprtc_api.ipp>
#endif
