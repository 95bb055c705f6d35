#pragma once
/// \file `cotune::cuda::cuda_backend`: the GPU backend (gpu/rtc_backend.hpp) over CUDA: kernels
/// compiled by NVRTC into cubins kept in a cache, loaded and launched through the driver API. Both
/// libraries are opened at run time. This file holds CUDA's API table for the backend and nothing else.
///
/// A kernel is CUDA C++ source; its entry is a kernel name or a name expression such as
/// `"gemm<BLOCK_M, BLOCK_N>"` (NVRTC instantiates and names it). Each config parameter becomes a
/// `-D NAME=value` macro, and the launch options become COTUNE_NUM_WARPS, COTUNE_NUM_STAGES,
/// COTUNE_THREADS_PER_BLOCK (for `__launch_bounds__`) and COTUNE_BLOCK_X/Y/Z. A launch runs the
/// config's block (`launch_options::block`, else num_warps x 32 or threads_per_block threads along x)
/// on the grid the caller gives, on cotune's stream or, through `launch_on`, the caller's.

#include <cotune/detail/config.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/version.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/isolation.hpp>
#include <cotune/cuda/nvrtc_api.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/gpu/rtc_compile.hpp>

namespace cotune::cuda {

namespace detail {

/// The driver calls a loaded kernel makes (gpu/loaded_kernel.hpp).
struct kernel_calls {
  using context = device_context;
  using module = CUmodule;
  using function = CUfunction;
  using stream = CUstream;
  using result = CUresult;
  using memory = memory_runtime;
  static constexpr std::string_view backend = "cuda backend", shared_name = "shared memory",
                                    entry_call = "cuModuleGetFunction", attribute_call = "cuFuncGetAttribute",
                                    global_call = "cuModuleGetGlobal";

  [[nodiscard]] static bool ok(CUresult r) noexcept { return r == CUDA_SUCCESS; }
  [[nodiscard]] static bool sticky(CUresult r) noexcept { return is_sticky_error(r); }
  [[nodiscard]] static bool not_found(CUresult r) noexcept { return r == CUDA_ERROR_NOT_FOUND; }
  static CUresult load(const device_context& ctx, const std::string& image, CUmodule* m) {
    return ctx.api().module_load_data(m, image.c_str());
  }
  static void unload(const device_context& ctx, CUmodule m) noexcept {
    (void)ctx.try_make_current();
    (void)ctx.api().module_unload(m);
  }
  static CUresult entry(const device_context& ctx, CUfunction* f, CUmodule m, const char* symbol) {
    return ctx.api().module_get_function(f, m, symbol);
  }
  static CUresult attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, CUfunction f);
  static CUresult global(const device_context& ctx, CUdeviceptr* p, std::size_t* bytes, CUmodule m, const char* name) {
    return ctx.api().module_get_global(p, bytes, m, name);
  }
  static CUresult allow_shared(const device_context& ctx, CUfunction f, int bytes) {
    return ctx.api().func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  }
  static CUresult launch(const device_context& ctx, CUfunction f, const launch_grid& g, const block_dims& b,
                         CUstream stream, void** params) {
    return ctx.api().launch_kernel(f, g.x, g.y, g.z, static_cast<unsigned>(b.x), static_cast<unsigned>(b.y),
                                   static_cast<unsigned>(b.z), g.shared_bytes, stream, params, nullptr);
  }
  /// Waits for the whole context (an isolation worker, after a failure: a sticky error lost it).
  static CUresult synchronize_device(const device_context& ctx) { return ctx.api().ctx_synchronize(); }
};

/// The architecture named by `-arch=X`, `-arch X`, `--gpu-architecture=X` or `--gpu-architecture X`
/// among `options`, if any.
[[nodiscard]] COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options);

/// Reads ptxas's "uses too much shared data (0x32000 bytes, 0xc000 max)" from an NVRTC log.
[[nodiscard]] COTUNE_DECL std::optional<std::pair<std::int64_t, std::int64_t>> shared_overflow(const std::string& log);

} // namespace detail

class cuda_benchmarker; // cuda_benchmarker.hpp

namespace detail {

/// What the GPU backend (gpu/rtc_backend.hpp) needs of CUDA: NVRTC, the driver, and their names.
struct backend_api {
  using device = cuda::device;
  using context = device_context;
  using benchmarker = cuda_benchmarker;
  using kernel_calls = detail::kernel_calls;
  using sharing = ipc_sharing;
  static constexpr const gpu::detail::worker_kind& worker_kind = isolation_worker_kind;
  static constexpr gpu::rtc_runtime_names names{.key = "cuda",
                                                .device_word = "CUDA",
                                                .backend = "cuda backend",
                                                .compiler = "NVRTC",
                                                .compiler_key = "nvrtc",
                                                .library_key = "driver",
                                                .source_suffix = ".cu",
                                                .arch_flag = "-arch=",
                                                .include_flag = "--include-path=",
                                                .debug_flag = "-lineinfo",
                                                .capture_call = "cuStreamIsCapturing"};
  static constexpr bool has_ptx = true, warp_size_macro = false;

  [[nodiscard]] static const nvrtc_library& compiler() { return nvrtc(); }
  [[nodiscard]] static const nvrtc_library* try_compiler() { return try_nvrtc(); }
  [[nodiscard]] static const driver_library* try_library() { return try_driver(); }
  [[nodiscard]] static std::string library_error() { return driver_error(); }
  [[nodiscard]] static device describe_device(const driver_library& lib, int ordinal) {
    return cuda::describe_device(lib, ordinal);
  }
  [[nodiscard]] static const device_context& context_of(int ordinal) { return driver().context(ordinal); }
  [[nodiscard]] static const cuda_knob_group& knobs() { return cuda_knobs(); }
  [[nodiscard]] static std::string compiler_options_text() { return cuda_knobs().nvrtc_options.get(); }
  [[nodiscard]] static std::vector<device> devices() { return cuda::devices(); }
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return cuda::interchangeable(a, b); }
  [[nodiscard]] static std::optional<std::string> requested_arch(const std::vector<std::string>& o) {
    return detail::requested_arch(o);
  }
  static void add_options(std::vector<std::string>& out, const config& c) {
    if (const auto& launch = c.launch(); launch.maxnreg) out.push_back(fmt::format("--maxrregcount={}", *launch.maxnreg));
  }
  /// NVRTC must know the device's own architecture; a virtual or other one the options name is theirs.
  static void check_target(const nvrtc_library& nv, const device& d, const std::string& arch, std::string_view name);
  static void add_compile_options(const nvrtc_library& nv, std::vector<std::string>& opts) {
    if (!nv.toolkit_include_dir().empty()) opts.push_back("--include-path=" + nv.toolkit_include_dir().string());
  }
  /// ptxas's "uses too much shared data" is a resource limit, not a compile error.
  static void check_failure(const gpu::rtc_output& out) {
    if (auto overflow = shared_overflow(out.log)) throw out_of_resources("shared memory", overflow->first, overflow->second);
  }
  [[nodiscard]] static std::string binary_suffix(const std::string& arch) {
    return arch.starts_with("compute_") ? ".ptx" : ".cubin";
  }
  [[nodiscard]] static std::string image_text(const gpu::rtc_binary& bin) {
    return fmt::format("the binary is {} for {}", bin.is_ptx ? "PTX" : "a cubin", bin.arch);
  }
  [[nodiscard]] static gpu::device_resources resources(const device& d) {
    return {d.max_threads_per_block, std::int64_t{d.max_registers_per_block}, d.max_shared_per_block_optin};
  }
  [[nodiscard]] static CUresult is_capturing(const driver_library& lib, CUstream stream, bool* capturing);
  template <class... Args>
  static constexpr void check_arguments() {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container (std::vector, std::array, std::span) cannot be a CUDA kernel's argument: its "
                  "memory is on the host; copy it to a cuda::device_buffer, or wrap device memory you own with "
                  "cuda::device_view(ptr, count, device)");
  }

private:
  [[nodiscard]] static std::string supported_text(const nvrtc_library& nv) {
    std::string out;
    for (int a : nv.supported_archs()) out += fmt::format("{}sm_{}", out.empty() ? "" : " ", a);
    return out.empty() ? std::string("(unknown)") : out;
  }
};

} // namespace detail

/// Compiles with NVRTC, loads and launches with the driver API (cubins are stored by the tuner's
/// binary cache, tune/binary_cache.hpp): the GPU backend (gpu/rtc_backend.hpp) over CUDA. Satisfies
/// `cotune::Backend`.
class cuda_backend : public gpu::rtc_backend<detail::backend_api> {
public:
  /// How the backend starts.
  struct options {
    /// Open NVRTC on a background thread as soon as the driver is open (see `preload_nvrtc`); never
    /// with COTUNE_PRECOMPILED=only.
    bool preload_nvrtc = true;
  };

  cuda_backend() : cuda_backend(options{}) {}
  explicit cuda_backend(options o);
};

// The optional capabilities the CUDA backend means to offer (a misspelt member fails here).
static_assert(HasDeviceKey<cuda_backend> && StoppableCompiler<cuda_backend> && ComparesDevices<cuda_backend> &&
              DeclaresBenchmarker<cuda_backend> && ReportsWarnings<cuda_backend> && LaunchesOnStreams<cuda_backend> &&
              FindsModuleGlobals<cuda_backend>);

static_assert(Backend<cuda_backend>);

} // namespace cotune::cuda

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/cuda_backend.ipp>
#endif
