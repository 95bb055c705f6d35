#pragma once
/// \file `cotune::cuda::nvrtc_library`: NVRTC, loaded at run time with dlopen.
///
/// NVRTC compiles CUDA C++ to cubins (or PTX) in-process, with no GPU needed. Like the driver, it is
/// opened on first use, so a program built with cotune runs where the CUDA toolkit is absent.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>

#include <cuda.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_knobs.hpp>

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

/// What one NVRTC compilation produced.
struct nvrtc_output {
  bool ok = false;
  std::string error;        ///< NVRTC's result text when not ok
  std::string log;          ///< the compiler's diagnostics (also on success: warnings)
  std::string image;        ///< cubin bytes, or NUL-free PTX text when `is_ptx`
  bool is_ptx = false;
  std::string lowered_name; ///< the mangled symbol of the name expression
};

/// An opened libnvrtc: its function table, version, supported architectures and toolkit headers.
class nvrtc_library {
public:
  nvrtc_library(const nvrtc_library&) = delete;
  nvrtc_library& operator=(const nvrtc_library&) = delete;

  /// Opens the first of `paths` that loads and resolves every function; sets `why` otherwise.
  [[nodiscard]] static std::unique_ptr<nvrtc_library> open(const std::vector<std::string>& paths, std::string& why) {
    std::string tried;
    for (const auto& path : paths) {
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* e = ::dlerror();
        tried += fmt::format("\n  {}: {}", path, e ? e : "unknown error");
        continue;
      }
      std::unique_ptr<nvrtc_library> lib(new nvrtc_library(handle, path));
      std::string missing;
#define COTUNE_NVRTC_RESOLVE(member, name)                                                                  \
  lib->api_.member = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));                           \
  if (!lib->api_.member) missing += std::string(missing.empty() ? "" : ", ") + #name;
      COTUNE_NVRTC_FUNCTIONS(COTUNE_NVRTC_RESOLVE)
#undef COTUNE_NVRTC_RESOLVE
      if (!missing.empty()) {
        tried += fmt::format("\n  {}: lacks {} (an NVRTC older than CUDA 11.1?)", path, missing);
        continue;
      }
      lib->api_.version(&lib->major_, &lib->minor_);
      int n = 0;
      if (lib->api_.get_num_supported_archs(&n) == NVRTC_SUCCESS && n > 0) {
        lib->archs_.resize(static_cast<std::size_t>(n));
        if (lib->api_.get_supported_archs(lib->archs_.data()) != NVRTC_SUCCESS) lib->archs_.clear();
      }
      lib->include_dir_ = find_toolkit_include_dir(handle);
      return lib;
    }
    why = fmt::format("cannot load NVRTC (needed to compile CUDA kernels); tried:{}\ninstall the CUDA toolkit's "
                      "NVRTC, or set COTUNE_LIBNVRTC_PATH (cotune::cuda::cuda_knobs().libnvrtc_path) to libnvrtc.so's path",
                      tried);
    return nullptr;
  }

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
  /// How many compilations this process has run (a warm start runs none).
  [[nodiscard]] std::uint64_t compilations() const noexcept { return compilations_.load(std::memory_order_relaxed); }

  /// Compiles `source` with `options`, registering `name_expression` and returning its lowered
  /// name. Thread-safe: NVRTC compiles separate programs concurrently.
  [[nodiscard]] nvrtc_output compile(const std::string& source, const std::string& file_name,
                                     const std::vector<std::string>& options,
                                     const std::string& name_expression) const {
    nvrtc_output out;
    nvrtcProgram program = nullptr;
    if (nvrtcResult r = api_.create_program(&program, source.c_str(), file_name.c_str(), 0, nullptr, nullptr);
        r != NVRTC_SUCCESS) {
      out.error = fmt::format("nvrtcCreateProgram: {}", api_.get_error_string(r));
      return out;
    }
    struct destroy {
      const nvrtc_api& api;
      nvrtcProgram& p;
      ~destroy() { api.destroy_program(&p); }
    } guard{api_, program};
    if (nvrtcResult r = api_.add_name_expression(program, name_expression.c_str()); r != NVRTC_SUCCESS) {
      out.error = fmt::format("nvrtcAddNameExpression('{}'): {}", name_expression, api_.get_error_string(r));
      return out;
    }
    std::vector<const char*> argv;
    argv.reserve(options.size());
    for (const auto& o : options) argv.push_back(o.c_str());
    compilations_.fetch_add(1, std::memory_order_relaxed);
    nvrtcResult compiled = api_.compile_program(program, static_cast<int>(argv.size()), argv.data());
    std::size_t log_size = 0;
    if (api_.get_program_log_size(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      out.log.resize(log_size);
      if (api_.get_program_log(program, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
      while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
    }
    if (compiled != NVRTC_SUCCESS) {
      out.error = api_.get_error_string(compiled);
      return out;
    }
    std::size_t size = 0;
    if (api_.get_cubin_size(program, &size) == NVRTC_SUCCESS && size > 0) {
      out.image.resize(size);
      if (nvrtcResult r = api_.get_cubin(program, out.image.data()); r != NVRTC_SUCCESS) {
        out.error = fmt::format("nvrtcGetCUBIN: {}", api_.get_error_string(r));
        return out;
      }
    } else {
      // A virtual architecture (-arch=compute_XY) yields PTX only; the driver compiles it at load.
      if (nvrtcResult r = api_.get_ptx_size(program, &size); r != NVRTC_SUCCESS || size == 0) {
        out.error = "NVRTC produced neither a cubin nor PTX";
        return out;
      }
      out.image.resize(size);
      if (nvrtcResult r = api_.get_ptx(program, out.image.data()); r != NVRTC_SUCCESS) {
        out.error = fmt::format("nvrtcGetPTX: {}", api_.get_error_string(r));
        return out;
      }
      while (!out.image.empty() && out.image.back() == '\0') out.image.pop_back();
      out.is_ptx = true;
    }
    const char* lowered = nullptr;
    if (nvrtcResult r = api_.get_lowered_name(program, name_expression.c_str(), &lowered);
        r != NVRTC_SUCCESS || !lowered) {
      out.error = fmt::format("nvrtcGetLoweredName('{}'): {}", name_expression,
                              r != NVRTC_SUCCESS ? api_.get_error_string(r) : "no name");
      return out;
    }
    out.lowered_name = lowered;
    out.ok = true;
    return out;
  }

private:
  nvrtc_library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  /// `<lib>/../include` beside the loaded library (as the loader found it, then with links resolved),
  /// then $CUDA_HOME, $CUDA_PATH and /usr/local/cuda; the first that holds cuda_fp16.h.
  static std::filesystem::path find_toolkit_include_dir(void* handle) {
    std::vector<std::filesystem::path> candidates;
    Dl_info info{};
    if (void* sym = ::dlsym(handle, "nvrtcVersion"); sym && ::dladdr(sym, &info) && info.dli_fname) {
      std::filesystem::path lib(info.dli_fname);
      candidates.push_back(lib.parent_path().parent_path() / "include");
      std::error_code ec;
      auto real = std::filesystem::canonical(lib, ec);
      if (!ec) candidates.push_back(real.parent_path().parent_path() / "include");
    }
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(env); v && *v) candidates.push_back(std::filesystem::path(v) / "include");
    candidates.emplace_back("/usr/local/cuda/include");
    for (const auto& dir : candidates) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir / "cuda_fp16.h", ec)) return dir;
    }
    return {};
  }

  void* handle_; // never closed: compiled programs' code may still reference it
  std::string path_;
  nvrtc_api api_{};
  int major_ = 0;
  int minor_ = 0;
  std::vector<int> archs_;
  std::filesystem::path include_dir_;
  mutable std::atomic<std::uint64_t> compilations_{0};
};

namespace detail {

struct nvrtc_entry {
  std::unique_ptr<nvrtc_library> library;
  std::string message;
};

/// Where to look for NVRTC: the knob's path alone when set; else the soname of the toolkit cotune
/// was built against, the unversioned name, then $CUDA_HOME/lib64, $CUDA_PATH/lib64 and
/// /usr/local/cuda/lib64 (where the toolkit installs it, often not on the loader's path).
[[nodiscard]] inline std::vector<std::string> nvrtc_search_paths() {
  if (auto chosen = cuda_knobs().libnvrtc_path.get()) return {*chosen};
  const std::string soname = fmt::format("libnvrtc.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> paths{soname, "libnvrtc.so"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) paths.push_back(fmt::format("{}/lib64/{}", v, soname));
  paths.push_back("/usr/local/cuda/lib64/" + soname);
  return paths;
}

[[nodiscard]] inline const nvrtc_entry& nvrtc_entry_for(const std::vector<std::string>& paths) {
  // Never destroyed, so that a preload thread joined at exit (below) still finds them alive.
  static auto* mutex = new std::mutex;
  static auto* entries = new std::map<std::vector<std::string>, std::unique_ptr<nvrtc_entry>>;
  std::lock_guard lock(*mutex);
  auto& slot = (*entries)[paths];
  if (!slot) {
    slot = std::make_unique<nvrtc_entry>();
    slot->library = nvrtc_library::open(paths, slot->message);
  }
  return *slot;
}

} // namespace detail

/// Starts opening NVRTC on a background thread, once per process. Opening it costs about 5 ms
/// (15 ms from a cold page cache; measured on this project's build machine: libnvrtc.so.13 is 104 MiB
/// with 4.8 MB of relocations), which would otherwise sit between a warm start's driver
/// initialisation and its first launch, since every cache key holds NVRTC's version. The CUDA backend
/// has this called when the driver opens, so the load overlaps with cuInit and context creation.
inline void preload_nvrtc() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct joiner {
      std::thread thread;
      ~joiner() {
        if (thread.joinable()) thread.join();
      }
    };
    static joiner background; // joined at exit, before the process tears down
    background.thread = std::thread([paths = detail::nvrtc_search_paths()] { (void)detail::nvrtc_entry_for(paths); });
  });
}

/// NVRTC as the `cuda.libnvrtc_path` knob says, or nullptr (`nvrtc_error()` says why).
[[nodiscard]] inline const nvrtc_library* try_nvrtc() { return detail::nvrtc_entry_for(detail::nvrtc_search_paths()).library.get(); }

/// Why `try_nvrtc()` is null (empty when NVRTC loaded).
[[nodiscard]] inline std::string nvrtc_error() { return detail::nvrtc_entry_for(detail::nvrtc_search_paths()).message; }

/// NVRTC; throws cotune::error with the reason when it cannot be loaded.
[[nodiscard]] inline const nvrtc_library& nvrtc() {
  const auto& entry = detail::nvrtc_entry_for(detail::nvrtc_search_paths());
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::cuda

#undef COTUNE_NVRTC_FUNCTIONS
