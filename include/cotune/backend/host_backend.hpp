#pragma once
/// \file `cotune::host_backend`: CPU kernels built by the system C++ compiler into shared objects, then
/// dlopen'ed. The C++ counterpart of Triton's compile_module_from_src (spec §7).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/detail/config.hpp>

namespace cotune {

/// The host compiler: its resolved path and what `--version` says (both part of every host key).
struct host_compiler {
  std::filesystem::path path;
  std::string version;
};

namespace detail {
/// `machine,system,cpu model`: the host part of a host kernel's key (with -march=native, binaries
/// are specific to the CPU model).
[[nodiscard]] COTUNE_DECL const std::string& host_platform();
} // namespace detail

/// Resolves the host C++ compiler: the `build.cxx` knob (CXX), else c++, g++, clang++ on PATH.
/// `--version` runs once per compiler path.
[[nodiscard]] COTUNE_DECL host_compiler resolve_host_compiler();

/// Builds CPU kernels with the system compiler into shared objects and dlopens them. A kernel's entry
/// is an `extern "C"` function; each config parameter becomes a `-D NAME=value` macro. Binaries are
/// stored by the tuner's binary cache (tune/binary_cache.hpp), not here.
class host_backend {
public:
  /// The CPU.
  struct device {
    friend bool operator==(const device&, const device&) = default;
  };
  /// A compiled kernel: the shared object's bytes, or the file that holds them.
  struct binary {
    std::string image;          ///< the shared object (empty when only `path` is known)
    std::filesystem::path path; ///< the shared object's file, or empty (then `load` writes a private one)
    std::shared_ptr<const void> hold{}; ///< keeps `path` in the cache while the library is loaded
  };
  /// A loaded kernel.
  struct function {
    std::shared_ptr<void> library;
    void* symbol = nullptr;
  };
  /// CPU kernels are timed by the host clock.
  using default_benchmarker_type = host_benchmarker;
  /// Compiles run on the same cores as the measurements: measure only once every candidate is built.
  static constexpr bool benchmark_overlaps_compile = false;
  /// dlopen takes a file: the binary cache hands over the cached file instead of its bytes.
  static constexpr bool loads_from_file = true;
  /// A candidate runs in the process's own memory: a forked copy can benchmark it in isolation.
  static constexpr bool fork_isolation = true;
  /// CPU kernels have no launch geometry: configs are shown without GPU launch options.
  static constexpr bool uses_launch_options = false;

  [[nodiscard]] std::vector<device> devices() const { return {device{}}; }
  /// One CPU: every host tuner measures on one device thread.
  [[nodiscard]] std::string device_key(const device&) const { return "host"; }

  [[nodiscard]] COTUNE_DECL std::string fingerprint(const device&) const;
  [[nodiscard]] std::string device_name(const device&) const { return "host (" + detail::host_platform() + ")"; }

  /// The full compile command for a kernel and config, output path last (exposed for tests and `--debug`).
  [[nodiscard]] COTUNE_DECL std::vector<std::string> command(const host_compiler& cc, const kernel_source& k,
                                                             const config& c, const std::string& src,
                                                             const std::string& out) const;

  /// What a binary is made from: the compiler's identity (path and --version), the platform, every
  /// flag, include dir and macro, and the source. Triton's key covers only source + platform (spec
  /// §7), so a flag change reused a stale binary.
  [[nodiscard]] COTUNE_DECL binary_recipe binary_key(const kernel_source& k, const config& c, const device& = {}) const;

  /// Builds the shared object for `k` under `c` (always: caching is the binary cache's). Thread-safe.
  [[nodiscard]] COTUNE_DECL binary compile(const kernel_source& k, const config& c, const device& = {},
                                           std::stop_token stop = {}) const;

  [[nodiscard]] binary_image to_image(const binary& b) const { return {b.image, {}, b.path, b.hold}; }
  [[nodiscard]] std::optional<binary> from_image(binary_image img) const {
    if (img.bytes.empty() && img.file.empty()) return std::nullopt;
    return binary{std::move(img.bytes), std::move(img.file), std::move(img.hold)};
  }

  /// dlopens the binary and finds the entry point. A binary in no file (a failed cache write, or one
  /// straight from `compile`) is written to a directory private to this process first.
  [[nodiscard]] COTUNE_DECL function load(const binary& bin, const kernel_source& k, const config& c,
                                         const device& = {}) const;

  /// The global variable `name` of `f`'s shared object (defined at global namespace scope, not static,
  /// so that its symbol is unmangled and exported), found with dlsym and sized from its ELF symbol, or
  /// nothing when there is none. Throws cotune::error when `name` is a function or read-only data.
  /// (Loads of one binary share its library, and so its globals.)
  [[nodiscard]] COTUNE_DECL std::optional<module_global> find_global(const function& f, std::string_view name) const;

  /// Calls the entry point `extern "C" void entry(A...)`, where each A is what `kernel_arg` gives
  /// for the argument (a host_span<T> passes T*). The declared signature must match the kernel's.
  template <class... Args>
  void launch(const function& f, const launch_grid&, Args&... args) const {
    using entry_type = void (*)(std::decay_t<decltype(kernel_arg(args))>...);
    reinterpret_cast<entry_type>(f.symbol)(kernel_arg(args)...);
  }
};

// The optional capabilities the host backend means to offer (a misspelt member fails here).
static_assert(HasDeviceKey<host_backend> && DeclaresCompileOverlap<host_backend> && StoppableCompiler<host_backend> &&
              DeclaresBenchmarker<host_backend> && DeclaresFileLoading<host_backend> &&
              DeclaresForkIsolation<host_backend> && DeclaresLaunchOptions<host_backend> &&
              FindsModuleGlobals<host_backend>);

static_assert(Backend<host_backend>);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/backend/host_backend.ipp>
#endif
