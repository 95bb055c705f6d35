#pragma once
/// \file `cotune::hip::hip_backend`: the GPU backend (gpu/rtc_backend.hpp) over HIP: kernels compiled
/// by hiprtc into AMD GPU code objects (kept by the tuner's binary cache, keyed by architecture),
/// loaded and launched through the HIP runtime. Both libraries are opened at run time. This file
/// holds HIP's API table for the backend and nothing else.
///
/// A kernel is HIP C++ source; its entry is a kernel name or a name expression. Each config parameter
/// becomes a `-D NAME=value` macro, and the launch options become COTUNE_NUM_WARPS (wavefronts, as in
/// Triton's AMD backend), COTUNE_NUM_STAGES, COTUNE_WARP_SIZE and COTUNE_THREADS_PER_BLOCK. A launch runs
/// num_warps x the device's wavefront size threads per block (unless threads_per_block is set).

#include <cotune/detail/config.hpp>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/gpu/rtc_compile.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/hip/hiprtc_api.hpp>
#include <cotune/hip/isolation.hpp>

namespace cotune::hip {

namespace detail {

/// The runtime calls a loaded kernel makes (gpu/loaded_kernel.hpp).
struct kernel_calls {
  using context = device_context;
  using module = hip_module;
  using function = hip_function;
  using stream = hip_stream;
  using result = hip_error;
  using memory = memory_runtime;
  static constexpr std::string_view backend = "hip backend", shared_name = "shared memory (LDS)",
                                    entry_call = "hipModuleGetFunction", attribute_call = "hipFuncGetAttribute",
                                    global_call = "hipModuleGetGlobal";

  [[nodiscard]] static bool ok(hip_error r) noexcept { return r == hip_success; }
  [[nodiscard]] static bool sticky(hip_error r) noexcept { return is_sticky_error(r); }
  [[nodiscard]] static bool not_found(hip_error r) noexcept { return r == hip_error_not_found; }
  static hip_error load(const device_context& ctx, const std::string& image, hip_module* m) {
    return ctx.api().module_load_data(m, image.data());
  }
  static void unload(const device_context& ctx, hip_module m) noexcept {
    (void)ctx.try_make_current();
    (void)ctx.api().module_unload(m);
  }
  static hip_error entry(const device_context& ctx, hip_function* f, hip_module m, const char* symbol) {
    return ctx.api().module_get_function(f, m, symbol);
  }
  static hip_error attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, hip_function f);
  static hip_error global(const device_context& ctx, device_ptr* p, std::size_t* bytes, hip_module m, const char* name) {
    return ctx.api().module_get_global(p, bytes, m, name);
  }
  /// Never called: a kernel may use the device's whole LDS without opting in (load_kernel says so).
  static hip_error allow_shared(const device_context&, hip_function, int) noexcept { return hip_success; }
  static hip_error launch(const device_context& ctx, hip_function f, const launch_grid& g, const block_dims& b,
                          hip_stream stream, void** params) {
    return ctx.api().module_launch_kernel(f, g.x, g.y, g.z, static_cast<unsigned>(b.x), static_cast<unsigned>(b.y),
                                          static_cast<unsigned>(b.z), g.shared_bytes, stream, params, nullptr);
  }
  /// Waits for the whole device (an isolation worker, after a failure: a sticky error lost its work).
  static hip_error synchronize_device(const device_context& ctx) { return ctx.api().device_synchronize(); }
};

/// The architecture named by `--offload-arch=X` among `options`, if any.
[[nodiscard]] COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options);

} // namespace detail

class hip_benchmarker; // hip_benchmarker.hpp

namespace detail {

/// What the GPU backend (gpu/rtc_backend.hpp) needs of HIP: hiprtc, the runtime, and their names.
struct backend_api {
  using device = hip::device;
  using context = device_context;
  using benchmarker = hip_benchmarker;
  using kernel_calls = detail::kernel_calls;
  using sharing = ipc_sharing;
  static constexpr const gpu::detail::worker_kind& worker_kind = isolation_worker_kind;
  static constexpr gpu::rtc_runtime_names names{.key = "hip",
                                                .device_word = "HIP",
                                                .backend = "hip backend",
                                                .compiler = "hiprtc",
                                                .compiler_key = "hiprtc",
                                                .library_key = "runtime",
                                                .source_suffix = ".hip",
                                                .arch_flag = "--offload-arch=",
                                                .include_flag = "-I",
                                                .debug_flag = "-g",
                                                .capture_call = "hipStreamIsCapturing"};
  static constexpr bool has_ptx = false, warp_size_macro = true;

  [[nodiscard]] static const hiprtc_library& compiler() { return hiprtc(); }
  [[nodiscard]] static const hiprtc_library* try_compiler() { return try_hiprtc(); }
  [[nodiscard]] static const runtime_library* try_library() { return try_runtime(); }
  [[nodiscard]] static std::string library_error() { return hip::runtime_error(); }
  [[nodiscard]] static device describe_device(const runtime_library& lib, int ordinal) {
    return hip::describe_device(lib, ordinal);
  }
  [[nodiscard]] static const device_context& context_of(int ordinal) { return runtime().context(ordinal); }
  [[nodiscard]] static const hip_knob_group& knobs() { return hip_knobs(); }
  [[nodiscard]] static std::string compiler_options_text() { return hip_knobs().hiprtc_options.get(); }
  [[nodiscard]] static std::vector<device> devices() { return hip::devices(); }
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return hip::interchangeable(a, b); }
  [[nodiscard]] static std::optional<std::string> requested_arch(const std::vector<std::string>& o) {
    return detail::requested_arch(o);
  }
  static void add_options(std::vector<std::string>&, const config&) noexcept {} // hiprtc has no register cap
  static void check_target(const hiprtc_library&, const device&, const std::string&, std::string_view) noexcept {}
  static void add_compile_options(const hiprtc_library&, std::vector<std::string>&) noexcept {}
  static void check_failure(const gpu::rtc_output&) noexcept {}
  [[nodiscard]] static std::string binary_suffix(const std::string&) { return ".hsaco"; }
  [[nodiscard]] static std::string image_text(const gpu::rtc_binary& bin) {
    return fmt::format("the code object is for {}", bin.arch);
  }
  /// No registers x threads check (the runtime reports no per-block register file), and the whole LDS
  /// without opting in.
  [[nodiscard]] static gpu::device_resources resources(const device& d) {
    return {d.max_threads_per_block, std::nullopt, d.max_shared_per_block};
  }
  [[nodiscard]] static hip_error is_capturing(const runtime_library& lib, hip_stream stream, bool* capturing);
  template <class... Args>
  static constexpr void check_arguments() {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container (std::vector, std::array, std::span) cannot be a HIP kernel's argument: its "
                  "memory is on the host; copy it to a hip::device_buffer, or wrap device memory you own with "
                  "hip::device_view(ptr, count, device)");
  }
};

} // namespace detail

/// Compiles with hiprtc, loads and launches with the HIP runtime: the GPU backend
/// (gpu/rtc_backend.hpp) over HIP. Satisfies `cotune::Backend`.
class hip_backend : public gpu::rtc_backend<detail::backend_api> {};

static_assert(HasDeviceKey<hip_backend> && StoppableCompiler<hip_backend> && ComparesDevices<hip_backend> &&
              DeclaresBenchmarker<hip_backend> && ReportsWarnings<hip_backend> && LaunchesOnStreams<hip_backend> &&
              FindsModuleGlobals<hip_backend>);
static_assert(Backend<hip_backend>);

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/hip_backend.ipp>
#endif
