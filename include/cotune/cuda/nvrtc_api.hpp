#pragma once
/// \file `cotune::cuda::nvrtc_library`: NVRTC, loaded at run time with dlopen.
///
/// NVRTC compiles CUDA C++ to cubins (or PTX) in-process, with no GPU needed. Like the driver, it is
/// opened on first use, so a program built with cotune runs where the CUDA toolkit is absent.

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
#include <vector>

#include <dlfcn.h>

#include <cuda.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/detail/fork_server.hpp>

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
  /// What stopped a compilation midway (only a compile process can be stopped).
  enum class stop_cause { none, deadline, stop_request };

  bool ok = false;
  stop_cause stopped = stop_cause::none; ///< set when the compile was killed before it finished
  std::string error;        ///< NVRTC's result text when not ok
  std::string log;          ///< the compiler's diagnostics (also on success: warnings)
  std::string image;        ///< cubin bytes, or NUL-free PTX text when `is_ptx`
  bool is_ptx = false;
  std::string lowered_name; ///< the mangled symbol of the name expression
  bool crashed = false;     ///< the compile process died (NVRTC crashed), rather than NVRTC reporting an error
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
  /// name. Thread-safe. With the `cuda.compile_processes` knob on (the default), the compilation runs
  /// in its own process (see detail/fork_server.hpp): compiles then run in parallel, and one still
  /// running past `deadline` or when `stop` is requested is killed (`stopped` says which). In-process,
  /// NVRTC serialises much of its work between threads and cannot be interrupted.
  [[nodiscard]] nvrtc_output compile(const std::string& source, const std::string& file_name,
                                     const std::vector<std::string>& options, const std::string& name_expression,
                                     std::chrono::steady_clock::time_point deadline =
                                         std::chrono::steady_clock::time_point::max(),
                                     std::stop_token stop = {}) const {
    if (cuda_knobs().compile_processes.get())
      if (auto* server = compile_server()) {
        auto out = compile_in_process_of_its_own(*server, source, file_name, options, name_expression, deadline, stop);
        if (out) return *std::move(out);
      }
    // In this process NVRTC cannot be interrupted: the deadline and the stop request count only
    // before it starts.
    if (stop.stop_requested() || std::chrono::steady_clock::now() >= deadline) {
      nvrtc_output out;
      out.stopped = stop.stop_requested() ? nvrtc_output::stop_cause::stop_request : nvrtc_output::stop_cause::deadline;
      out.error = "stopped before it started";
      return out;
    }
    std::shared_lock lock(in_process_mutex_); // no compile server is forked while NVRTC runs here
    return compile_here(source, file_name, options, name_expression);
  }

  /// How many of compilations() ran in compile processes.
  [[nodiscard]] std::uint64_t process_compilations() const noexcept {
    return process_compilations_.load(std::memory_order_relaxed);
  }

  /// Starts the compile server now (if the `cuda.compile_processes` knob is on and none runs yet),
  /// rather than at the first compile. Each compile forks the server, and a fork costs in proportion
  /// to the memory the server holds: from a server forked out of a process holding 2 GB, a GEMM
  /// compile took 316-431 ms against 187-270 ms from one forked before the 2 GB were allocated (build
  /// machine, 2026-11-30). A program that will hold many GB when it first compiles can call this
  /// first, from its main thread. (Started from preload_nvrtc's thread during the driver's start-up,
  /// 16 concurrent compiles were slower on the H200 host, 1.40-1.54 s against 1.04-1.08 s for a
  /// server forked at the first compile, so the library does not do that by itself.) Returns whether
  /// a server runs.
  bool start_compile_server() const { return cuda_knobs().compile_processes.get() && compile_server() != nullptr; }

  /// The compile server's pid, or -1 if none has been started (for tests).
  [[nodiscard]] pid_t compile_server_pid() const {
    std::lock_guard lock(server_mutex_);
    return server_ ? server_->server_pid() : -1;
  }

private:
  /// Compiles in this process, on the calling thread.
  [[nodiscard]] nvrtc_output compile_here(const std::string& source, const std::string& file_name,
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

  /// The compile server, started on first use; null if it cannot be started (said once on stderr).
  [[nodiscard]] cotune::detail::fork_server* compile_server() const {
    std::lock_guard lock(server_mutex_);
    if (!server_tried_) {
      server_tried_ = true;
      // The server forks only while no thread of this process is inside NVRTC (it holds
      // in_process_mutex_ exclusively): its workers run NVRTC from the server's copy of this process,
      // and a lock held in that copy would never be released.
      try {
        server_ = std::make_unique<cotune::detail::fork_server>(&compile_job, this, &in_process_mutex_);
      } catch (const std::exception& e) {
        fmt::print(stderr, "cotune: warning: CUDA kernels will compile in this process, one NVRTC at a time: {}\n",
                   e.what());
      }
    }
    return server_.get();
  }

  /// Runs in a compile process: decodes the request, compiles, encodes the result.
  static std::string compile_job(const void* self, std::string_view request) {
    wire_reader in{request};
    const std::string source = in.text(), file_name = in.text(), name_expression = in.text();
    std::vector<std::string> options(in.count());
    for (auto& o : options) o = in.text();
    const auto out = static_cast<const nvrtc_library*>(self)->compile_here(source, file_name, options, name_expression);
    std::string reply;
    wire_put(reply, out.ok ? "1" : "0");
    wire_put(reply, out.is_ptx ? "1" : "0");
    for (const std::string* f : {&out.error, &out.log, &out.image, &out.lowered_name}) wire_put(reply, *f);
    return reply;
  }

  /// Compiles in a worker of `server`; nullopt if the server is lost (the caller compiles here instead).
  [[nodiscard]] std::optional<nvrtc_output> compile_in_process_of_its_own(
      cotune::detail::fork_server& server, const std::string& source, const std::string& file_name,
      const std::vector<std::string>& options, const std::string& name_expression,
      std::chrono::steady_clock::time_point deadline, std::stop_token stop) const {
    std::string request;
    for (const std::string* f : {&source, &file_name, &name_expression}) wire_put(request, *f);
    wire_put_count(request, options.size());
    for (const auto& o : options) wire_put(request, o);
    auto r = server.run(request, deadline, std::move(stop));
    nvrtc_output out;
    using cotune::detail::job_outcome;
    if (r.outcome != job_outcome::lost) {
      compilations_.fetch_add(1, std::memory_order_relaxed);
      process_compilations_.fetch_add(1, std::memory_order_relaxed);
    }
    switch (r.outcome) {
    case job_outcome::ok:
      try {
        wire_reader in{r.reply};
        out.ok = in.text() == "1";
        out.is_ptx = in.text() == "1";
        out.error = in.text();
        out.log = in.text();
        out.image = in.text();
        out.lowered_name = in.text();
      } catch (const std::exception& e) {
        out = nvrtc_output{};
        out.error = fmt::format("the compile process sent a malformed result ({})", e.what());
      }
      return out;
    case job_outcome::failed:
      out.error = fmt::format("the compile process failed: {}", r.detail);
      return out;
    case job_outcome::crashed:
      out.error = fmt::format("NVRTC crashed: the compile process {}", r.detail);
      out.crashed = true;
      return out;
    case job_outcome::timed_out:
    case job_outcome::cancelled:
      out.stopped = r.outcome == job_outcome::timed_out ? nvrtc_output::stop_cause::deadline
                                                        : nvrtc_output::stop_cause::stop_request;
      out.error = fmt::format("the compile process was {}", r.detail);
      return out;
    case job_outcome::lost:
      break;
    }
    static std::once_flag warned;
    std::call_once(warned, [&] {
      fmt::print(stderr, "cotune: warning: the CUDA compile server is unusable ({}); compiling in this process\n",
                 r.detail);
    });
    return std::nullopt;
  }

  // The compile processes' wire format: each field a u64 size and its bytes.
  static void wire_put_count(std::string& out, std::uint64_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); }
  static void wire_put(std::string& out, std::string_view field) {
    wire_put_count(out, field.size());
    out.append(field);
  }
  struct wire_reader {
    std::string_view data;
    std::uint64_t count() {
      std::uint64_t n = 0;
      if (data.size() < sizeof n) throw std::runtime_error("truncated field size");
      std::memcpy(&n, data.data(), sizeof n);
      data.remove_prefix(sizeof n);
      return n;
    }
    std::string text() {
      const std::uint64_t n = count();
      if (data.size() < n) throw std::runtime_error("truncated field");
      std::string out(data.substr(0, static_cast<std::size_t>(n)));
      data.remove_prefix(static_cast<std::size_t>(n));
      return out;
    }
  };

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
  mutable std::atomic<std::uint64_t> process_compilations_{0};
  mutable std::mutex server_mutex_;
  mutable bool server_tried_ = false;
  mutable std::unique_ptr<cotune::detail::fork_server> server_; ///< never destroyed (the library never is)
  mutable std::shared_mutex in_process_mutex_; ///< shared by in-process compiles, exclusive while forking
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
