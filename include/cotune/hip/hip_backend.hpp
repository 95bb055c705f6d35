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
#include <optional>
#include <stop_token>
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
#include <cotune/detail/isolated_run.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/hip/device.hpp>
#include <cotune/hip/device_buffer.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_knobs.hpp>
#include <cotune/hip/hiprtc_api.hpp>
#include <cotune/hip/isolation.hpp>
#include <cotune/knobs/knobs.hpp>

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
    (void)ctx.api().set_device(ctx.ordinal());
    (void)ctx.api().module_unload(m);
  }
  static hip_error entry(const device_context& ctx, hip_function* f, hip_module m, const char* symbol) {
    return ctx.api().module_get_function(f, m, symbol);
  }
  static hip_error attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, hip_function f) {
    using gpu::kernel_attribute;
    const int which = a == kernel_attribute::registers             ? hip_func_attribute_num_regs
                      : a == kernel_attribute::static_shared_bytes ? hip_func_attribute_shared_size_bytes
                      : a == kernel_attribute::local_bytes         ? hip_func_attribute_local_size_bytes
                                                                   : hip_func_attribute_max_threads_per_block;
    return ctx.api().func_get_attribute(v, which, f);
  }
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
  /// Candidates can be measured in an isolation worker process per device (COTUNE_ISOLATE;
  /// gpu/isolation.hpp): `run_in_worker`.
  static constexpr bool worker_isolation = true;
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return hip::interchangeable(a, b); }

  /// A compiled kernel: the code object and its symbol.
  struct binary {
    std::string image;        ///< the AMD GPU code object (an ELF)
    std::string lowered_name; ///< the symbol hiprtc gave the entry
    std::string arch;         ///< the target it was compiled for: "gfx90a:sramecc+:xnack-"
    std::string log;          ///< hiprtc's diagnostics, empty when clean
  };

  /// A loaded kernel, bound to one device. Copies share the module.
  using function = gpu::loaded_kernel<detail::kernel_calls>;

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
    return gpu::load_kernel<detail::kernel_calls>(
        *ctx, bin.image, bin.lowered_name, fmt::format("the code object is for {}", bin.arch), k, c,
        {.name = device_name(d),
         .warp_size = d.warp_size,
         .resources = {d.max_threads_per_block, std::nullopt, d.max_shared_per_block},
         .shared_without_opt_in = d.max_shared_per_block,
         .limits = d.limits()});
  }

  /// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
  /// `f`'s module, through hipModuleGetGlobal, or nothing when the module has none. Its copies go to the
  /// device's stream and wait for it (`tune_options::on_load` runs before the module's first launch).
  [[nodiscard]] std::optional<module_global> find_global(const function& f, std::string_view name) const {
    return gpu::find_global(f, name);
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
    gpu::launch_kernel(stream, f, grid, params);
  }

  /// Starts `d`'s isolation worker, if it is not running, without waiting for it (a tuning that will
  /// measure in isolation calls this first, so that the worker's start overlaps its compiles).
  void prestart_isolation(const device& d) const noexcept {
    gpu::detail::isolation_pool::of<detail::isolation_worker_kind>().prestart(d.ordinal);
  }

  /// Runs `bin` (loaded and checked here as `f`) in `f`'s device's isolation worker: once, or measured
  /// with `o` (`task.timed`), zeroing and restoring the flagged arguments there. Device memory goes as
  /// HIP IPC handles, the rest by value. `refused` (and a warning, once) when an argument's memory
  /// cannot be shared or no worker can start: the caller measures in-process then.
  template <class... Args>
  [[nodiscard]] cotune::detail::isolated_result run_in_worker(const binary& bin, const function& f,
                                                              const launch_grid& grid,
                                                              const cotune::detail::worker_task& task,
                                                              const bench_options& o, Args&... args) const {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container cannot be a HIP kernel's argument (see launch_on)");
    return gpu::detail::run_in_worker<detail::isolation_worker_kind, detail::ipc_sharing>(
        f, bin.image, bin.lowered_name, grid, task, o, hip_knobs().flush_factor.get(), hip_knobs().graph.get(), args...);
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

  /// Warnings about how compiles run (hiprtc's compile server could not start, or was lost) and how
  /// candidates are isolated (an isolation worker could not start, an argument it cannot reach).
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    const auto* rtc = try_hiprtc();
    auto out = rtc ? rtc->take_warnings() : std::vector<std::string>{};
    for (auto& w : detail::isolation_workers().take_warnings()) out.push_back(std::move(w));
    return out;
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
