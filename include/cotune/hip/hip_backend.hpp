#pragma once
/// \file `cotune::hip::hip_backend`: HIP kernels compiled by hiprtc into AMD GPU code objects (kept by
/// the tuner's binary cache, keyed by architecture), loaded and launched through the HIP runtime.
/// Both libraries are opened at run time.
///
/// A kernel is HIP C++ source; its entry is a kernel name or a name expression. Each config parameter
/// becomes a `-D NAME=value` macro, and the launch options become COTUNE_NUM_WARPS (wavefronts, as in
/// Triton's AMD backend), COTUNE_NUM_STAGES, COTUNE_WARP_SIZE and COTUNE_THREADS_PER_BLOCK. A launch runs
/// num_warps x the device's wavefront size threads per block (unless threads_per_block is set).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/hip/hiprtc_api.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::hip {

namespace detail {

/// A loaded module, unloaded when the last function that uses it goes.
struct loaded_module {
  const device_context* context;
  hip_module module;
  std::string kernel_name;
  std::string config_text;
  loaded_module(const device_context& ctx, hip_module m, std::string name, std::string cfg)
      : context(&ctx), module(m), kernel_name(std::move(name)), config_text(std::move(cfg)) {}
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;
  ~loaded_module() {
    (void)context->api().set_device(context->ordinal());
    (void)context->api().module_unload(module);
  }
};

/// The architecture named by `--offload-arch=X` among `options`, if any.
[[nodiscard]] inline std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  constexpr std::string_view flag = "--offload-arch=";
  for (const auto& o : options)
    if (std::string_view(o).starts_with(flag)) return o.substr(flag.size());
  return std::nullopt;
}

} // namespace detail

class hip_benchmarker; // hip_benchmarker.hpp

/// Compiles with hiprtc, loads and launches with the HIP runtime. Satisfies `cotune::Backend`.
class hip_backend {
public:
  using device = hip::device;
  using default_benchmarker_type = hip_benchmarker;
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return hip::interchangeable(a, b); }

  /// A compiled kernel: the code object and its symbol.
  struct binary {
    std::string image;        ///< the AMD GPU code object (an ELF)
    std::string lowered_name; ///< the symbol hiprtc gave the entry
    std::string arch;         ///< the target it was compiled for: "gfx90a:sramecc+:xnack-"
    std::string log;          ///< hiprtc's diagnostics, empty when clean
  };

  /// A loaded kernel, bound to one device. Copies share the module.
  struct function {
    std::shared_ptr<detail::loaded_module> module;
    hip_function handle = nullptr;
    const device_context* context = nullptr;
    unsigned threads_per_block = 0;
    block_dims block{};          ///< the config's block shape
    int kernel_max_threads = 0;  ///< the kernel's own limit
    launch_limits limits{};      ///< the device's, to name the dimension when a launch is refused
    int registers = 0;
    int static_shared_bytes = 0;
    int local_bytes = 0;
    std::int64_t max_dynamic_shared = 0;
  };

  hip_backend() { (void)hip_knobs(); }

  /// Every HIP device; empty (never an error) without a runtime or a device.
  [[nodiscard]] std::vector<device> devices() const { return hip::devices(); }

  /// `hip;hiprtc 5.2;runtime 5.2;gfx90a:sramecc+:xnack-`. Throws cotune::error if hiprtc cannot be loaded.
  [[nodiscard]] std::string fingerprint(const device& d) const {
    const auto* lib = try_runtime();
    return fmt::format("hip;hiprtc {};runtime {};{}", hiprtc().version_text(),
                       lib ? lib->version_text() : std::string("none"), d.arch());
  }

  [[nodiscard]] std::string device_key(const device& d) const {
    return d.pci_bus_id.empty() ? fmt::format("hip:ordinal:{}", d.ordinal) : "hip:pci:" + d.pci_bus_id;
  }

  /// "AMD Instinct MI250X (HIP device 0, gfx90a:sramecc+:xnack-)".
  [[nodiscard]] std::string device_name(const device& d) const {
    return fmt::format("{} (HIP device {}, {})", d.name.empty() ? std::string("unnamed device") : d.name, d.ordinal,
                       d.arch());
  }

  /// The target a kernel is compiled for on `d`: the kernel's own `--offload-arch=` (from
  /// kernel_source::options or COTUNE_HIPRTC_OPTIONS) if it has one, else the device's gcnArchName.
  [[nodiscard]] std::string target_arch(const kernel_source& k, const device& d) const {
    if (auto a = detail::requested_arch(k.options)) return *a;
    if (auto a = detail::requested_arch(gpu::split_options(hip_knobs().hiprtc_options.get()))) return *a;
    return d.arch();
  }

  /// The hiprtc options for `k` under `c` on `d`.
  [[nodiscard]] std::vector<std::string> options_for(const kernel_source& k, const config& c, const device& d) const {
    std::vector<std::string> out;
    const auto extra = gpu::split_options(hip_knobs().hiprtc_options.get());
    if (!detail::requested_arch(k.options) && !detail::requested_arch(extra)) out.push_back("--offload-arch=" + d.arch());
    gpu::add_config_macros(out, c, d.warp_size, /*warp_size_macro=*/true);
    if (knobs().runtime.debug.get()) out.push_back("-g");
    for (const auto& o : k.options) out.push_back(o);
    for (const auto& dir : k.include_dirs) out.push_back("-I" + dir);
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  /// What a binary is made from: hiprtc's version, the target, the kernel, the config and every option.
  [[nodiscard]] binary_recipe binary_key(const kernel_source& k, const config& c, const device& d) const {
    binary_recipe r{"hip", {"hiprtc " + hiprtc().version_text(), target_arch(k, d), k.digest(), k.entry, c.text()},
                    k.name + ".hsaco", /*has_meta=*/true};
    for (auto& o : options_for(k, c, d)) r.ingredients.push_back(std::move(o));
    return r;
  }

  /// Compiles `k` under `c` for `d`'s architecture. Thread-safe; touches no device state, so `d` may
  /// be a hand-made description on a machine without an AMD GPU. Throws compile_error (hiprtc's log,
  /// the config and the architecture), timeout_error (past COTUNE_COMPILE_TIMEOUT_MS, or `stop`),
  /// compiler_crashed, or cotune::error (hiprtc missing).
  [[nodiscard]] binary compile(const kernel_source& k, const config& c, const device& d, std::stop_token stop = {}) const {
    const auto& rtc = hiprtc();
    const gpu::rtc_names names{"hip backend", "hiprtc", rtc.version_text()};
    gpu::check_kernel(names, k);
    const std::string arch = target_arch(k, d);
    if (stop.stop_requested()) throw gpu::compile_cancelled(names, k, c, arch);
    const auto opts = options_for(k, c, d);
    const std::int64_t timeout_ms = knobs().autotuning.compile_timeout_ms.get();
    const auto deadline = timeout_ms > 0 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)
                                         : std::chrono::steady_clock::time_point::max();
    auto out = rtc.compile(k.code, k.name + ".hip", opts, k.entry, deadline, stop);
    gpu::throw_if_stopped_or_crashed(out, names, k, c, arch, timeout_ms);
    if (!out.ok) throw gpu::does_not_compile(out, names, k, c, arch, opts);
    return binary{std::move(out.image), std::move(out.lowered_name), arch, std::move(out.log)};
  }

  /// The code object as the binary cache stores it; its symbol, architecture and log as meta (JSON).
  [[nodiscard]] binary_image to_image(const binary& bin) const {
    return {bin.image, gpu::rtc_meta{bin.lowered_name, bin.arch, bin.log}.json(), {}};
  }
  [[nodiscard]] std::optional<binary> from_image(binary_image img) const {
    auto meta = gpu::rtc_meta::from_json(img.meta);
    if (img.bytes.empty() || !meta || meta->is_ptx) return std::nullopt;
    return binary{std::move(img.bytes), std::move(meta->lowered_name), std::move(meta->arch), std::move(meta->log)};
  }

  /// Loads the code object on `d` and checks its resources before any launch (threads per block,
  /// registers, LDS). Throws out_of_resources naming the resource, launch_error otherwise.
  [[nodiscard]] function load(const binary& bin, const kernel_source& k, const config& c, const device& d) const {
    const device_context* ctx = nullptr;
    try {
      ctx = &runtime().context(d.ordinal);
    } catch (const error& e) {
      throw launch_error(fmt::format("hip backend: cannot load kernel '{}' on {}: {}", k.name, device_name(d), e.what()));
    }
    ctx->make_current();
    const auto& api = ctx->api();
    const std::string what = fmt::format("loading kernel '{}' with config {{{}}}", k.name, c.text());
    hip_module mod = nullptr;
    if (hip_error r = api.module_load_data(&mod, bin.image.data()); r != hip_success)
      throw launch_error(fmt::format("hip backend: {} on {} failed: {} (the code object is for {})", what,
                                     device_name(d), ctx->library().error_text(r), bin.arch));
    auto module = std::make_shared<detail::loaded_module>(*ctx, mod, k.name, c.text());
    function f;
    f.module = module;
    f.context = ctx;
    ctx->check(api.module_get_function(&f.handle, mod, bin.lowered_name.c_str()),
               fmt::format("{}: hipModuleGetFunction('{}')", what, bin.lowered_name));
    auto attribute = [&](int a, const char* name) {
      int v = 0;
      ctx->check(api.func_get_attribute(&v, a, f.handle), fmt::format("{}: hipFuncGetAttribute({})", what, name));
      return v;
    };
    f.registers = attribute(hip_func_attribute_num_regs, "NUM_REGS");
    f.static_shared_bytes = attribute(hip_func_attribute_shared_size_bytes, "SHARED_SIZE_BYTES");
    f.local_bytes = attribute(hip_func_attribute_local_size_bytes, "LOCAL_SIZE_BYTES");
    const int kernel_max_threads = attribute(hip_func_attribute_max_threads_per_block, "MAX_THREADS_PER_BLOCK");
    const int threads = c.launch().threads(d.warp_size);
    f.block = c.launch().block_shape(d.warp_size);
    f.limits = d.limits();
    f.kernel_max_threads = kernel_max_threads;
    gpu::check_loaded_kernel("hip backend", c,
                             {threads, f.registers, kernel_max_threads, f.static_shared_bytes},
                             {d.max_threads_per_block, std::nullopt, d.max_shared_per_block, "shared memory (LDS)"},
                             f.block, f.limits);
    f.threads_per_block = static_cast<unsigned>(threads);
    f.max_dynamic_shared = d.max_shared_per_block - f.static_shared_bytes;
    return f;
  }

  /// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
  /// `f`'s module, through hipModuleGetGlobal, or nothing when the module has none. Its copies go to the
  /// device's stream and wait for it (`tune_options::on_load` runs before the module's first launch).
  [[nodiscard]] std::optional<module_global> find_global(const function& f, std::string_view name) const {
    const device_context* ctx = f.context;
    ctx->make_current();
    device_ptr ptr = nullptr;
    std::size_t bytes = 0;
    const std::string symbol(name);
    const hip_error r = ctx->api().module_get_global(&ptr, &bytes, f.module->module, symbol.c_str());
    if (r == hip_error_not_found) return std::nullopt;
    ctx->check(r, fmt::format("kernel '{}' with config {{{}}}: hipModuleGetGlobal('{}')", f.module->kernel_name,
                              f.module->config_text, symbol));
    return module_global{
        reinterpret_cast<std::uintptr_t>(ptr), bytes,
        [ctx](std::uintptr_t to, const void* from, std::size_t n) {
          memory_runtime::upload(*ctx, reinterpret_cast<device_ptr>(to), from, n);
        },
        [ctx](void* to, std::uintptr_t from, std::size_t n) {
          memory_runtime::download(*ctx, to, reinterpret_cast<device_ptr>(from), n);
        }};
  }

  /// A caller's stream (`autotuner::on(stream)`, a hipStream_t); it must belong to the device.
  using stream_type = hip_stream;

  /// Launches `f` on `grid` on the device's stream; each argument passed as `cotune::kernel_arg(arg)`.
  template <class... Args>
  void launch(const function& f, const launch_grid& grid, Args&... args) const {
    launch_on(f.context->stream(), f, grid, args...);
  }

  /// `launch` on the caller's `stream`: in order with the caller's work there, and capturable into a
  /// HIP graph (the launch makes no other runtime call than hipModuleLaunchKernel).
  template <class... Args>
  void launch_on(hip_stream stream, const function& f, const launch_grid& grid, Args&... args) const {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container (std::vector, std::array, std::span) cannot be a HIP kernel's argument: its "
                  "memory is on the host; copy it to a hip::device_buffer, or wrap device memory you own with "
                  "hip::device_view(ptr, count, device)");
    gpu::with_kernel_params([&](void** params) { launch_raw_on(stream, f, grid, params); }, args...);
  }

  void launch_raw(const function& f, const launch_grid& grid, void** params) const {
    launch_raw_on(f.context->stream(), f, grid, params);
  }

  /// `launch_raw` on the caller's `stream`.
  void launch_raw_on(hip_stream stream, const function& f, const launch_grid& grid, void** params) const {
    const device_context& ctx = *f.context;
    ctx.make_current();
    if (static_cast<std::int64_t>(grid.shared_bytes) > f.max_dynamic_shared)
      throw out_of_resources("shared memory (LDS)", std::int64_t{f.static_shared_bytes} + grid.shared_bytes,
                             std::int64_t{f.static_shared_bytes} + f.max_dynamic_shared);
    const block_dims& b = grid.block ? *grid.block : f.block;
    hip_error r = ctx.api().module_launch_kernel(f.handle, grid.x, grid.y, grid.z, static_cast<unsigned>(b.x),
                                                 static_cast<unsigned>(b.y), static_cast<unsigned>(b.z),
                                                 grid.shared_bytes, stream, params, nullptr);
    if (r != hip_success) [[unlikely]] {
      check_grid(grid, f.limits); // names the dimension and the limit (the runtime says only "invalid value")
      check_block(b, f.limits, f.kernel_max_threads);
      ctx.check(r, gpu::launch_text(f.module->kernel_name, f.module->config_text, grid, b));
    }
  }

  /// True while `stream` is being captured into a graph (an implicit capture of the null stream counts);
  /// tuning must not run then. Throws launch_error when the runtime cannot tell.
  [[nodiscard]] bool is_capturing(hip_stream stream) const {
    const auto* lib = try_runtime();
    if (!lib) return false;
    int status = hip_stream_capture_status_none;
    const hip_error r = lib->api().stream_is_capturing(stream, &status);
    if (r == hip_error_stream_capture_implicit) return true;
    if (r != hip_success)
      throw launch_error(fmt::format("hip backend: hipStreamIsCapturing failed: {}", lib->error_text(r)));
    return status != hip_stream_capture_status_none;
  }

  /// Waits for the work queued on the caller's `stream` (before a tuning reads or writes its buffers).
  void synchronize_stream(hip_stream stream) const {
    const auto* lib = try_runtime();
    if (!lib) return;
    if (hip_error r = lib->api().stream_synchronize(stream); r != hip_success)
      throw launch_error(fmt::format("hip backend: waiting for the caller's stream failed: {}", lib->error_text(r)));
  }

  /// Waits for everything cotune queued on `f`'s device.
  void synchronize(const function& f) const {
    f.context->make_current();
    f.context->synchronize("synchronizing");
  }

  /// Warnings about how compiles run (hiprtc's compile server could not start, or was lost).
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    const auto* rtc = try_hiprtc();
    return rtc ? rtc->take_warnings() : std::vector<std::string>{};
  }

  [[nodiscard]] hip_stream stream(const device& d) const { return runtime().context(d.ordinal).stream(); }

  /// Waits for everything cotune queued on `d`; a kernel's failure surfaces here as launch_error.
  void synchronize(const device& d) const {
    const auto& ctx = runtime().context(d.ordinal);
    ctx.make_current();
    ctx.synchronize("synchronizing");
  }
};

static_assert(HasDeviceKey<hip_backend> && StoppableCompiler<hip_backend> && ComparesDevices<hip_backend> &&
              DeclaresBenchmarker<hip_backend> && ReportsWarnings<hip_backend>);
static_assert(Backend<hip_backend>);
static_assert(LaunchesOnStreams<hip_backend> && FindsModuleGlobals<hip_backend>);

} // namespace cotune::hip
