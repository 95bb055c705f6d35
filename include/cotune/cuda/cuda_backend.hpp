#pragma once
/// \file `cotune::cuda::cuda_backend`: CUDA kernels compiled by NVRTC into cubins kept in a cache,
/// loaded and launched through the driver API. Both libraries are opened at run time.
///
/// A kernel is CUDA C++ source; its entry is a kernel name or a name expression such as
/// `"gemm<BLOCK_M, BLOCK_N>"` (NVRTC instantiates and names it). Each config parameter becomes a
/// `-D NAME=value` macro, and the launch options become COTUNE_NUM_WARPS, COTUNE_NUM_STAGES,
/// COTUNE_THREADS_PER_BLOCK (for `__launch_bounds__`) and COTUNE_BLOCK_X/Y/Z. A launch runs the
/// config's block (`launch_options::block`, else num_warps x 32 or threads_per_block threads along x)
/// on the grid the caller gives, on cotune's stream or, through `launch_on`, the caller's.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stop_token>
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
#include <cotune/detail/isolated_run.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/knobs/knobs.hpp>

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
    CUcontext current = nullptr;
    const auto& api = ctx.api();
    if (api.ctx_get_current(&current) != CUDA_SUCCESS || current != ctx.context()) (void)api.ctx_set_current(ctx.context());
    (void)api.module_unload(m);
  }
  static CUresult entry(const device_context& ctx, CUfunction* f, CUmodule m, const char* symbol) {
    return ctx.api().module_get_function(f, m, symbol);
  }
  static CUresult attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, CUfunction f) {
    using gpu::kernel_attribute;
    const CUfunction_attribute which = a == kernel_attribute::registers             ? CU_FUNC_ATTRIBUTE_NUM_REGS
                                       : a == kernel_attribute::static_shared_bytes ? CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
                                       : a == kernel_attribute::local_bytes         ? CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
                                                                                    : CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    return ctx.api().func_get_attribute(v, which, f);
  }
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
};

/// The architecture named by `-arch=X`, `-arch X`, `--gpu-architecture=X` or `--gpu-architecture X`
/// among `options`, if any.
[[nodiscard]] inline std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    for (std::string_view flag : {"-arch", "--gpu-architecture"}) {
      std::string_view o = options[i];
      if (!o.starts_with(flag)) continue;
      o.remove_prefix(flag.size());
      if (o.starts_with("=")) return std::string(o.substr(1));
      if (o.empty() && i + 1 < options.size()) return options[i + 1];
    }
  }
  return std::nullopt;
}

/// Reads ptxas's "uses too much shared data (0x32000 bytes, 0xc000 max)" from an NVRTC log.
[[nodiscard]] inline std::optional<std::pair<std::int64_t, std::int64_t>> shared_overflow(const std::string& log) {
  constexpr std::string_view marker = "uses too much shared data (";
  auto at = log.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const char* p = log.c_str() + at + marker.size();
  char* end = nullptr;
  const long long required = std::strtoll(p, &end, 0);
  if (end == p) return std::nullopt;
  const char* limit_at = std::strstr(end, ", ");
  if (!limit_at) return std::nullopt;
  const long long limit = std::strtoll(limit_at + 2, &end, 0);
  if (end == limit_at + 2) return std::nullopt;
  return std::pair<std::int64_t, std::int64_t>{required, limit};
}

} // namespace detail

class cuda_benchmarker; // cuda_benchmarker.hpp

/// Compiles with NVRTC, loads and launches with the driver API (cubins are stored by the tuner's
/// binary cache, tune/binary_cache.hpp). Satisfies `cotune::Backend`; `launch` takes any arguments,
/// device spans passing their address.
class cuda_backend {
public:
  using device = cuda::device;
  /// What an autotuner over this backend measures with unless told otherwise (include
  /// cotune/cuda/cuda_benchmarker.hpp, or cotune/cuda/cuda.hpp, to use it).
  using default_benchmarker_type = cuda_benchmarker;
  /// Candidates can be measured in an isolation worker process per device (COTUNE_ISOLATE;
  /// gpu/isolation.hpp): `run_in_worker`.
  static constexpr bool worker_isolation = true;
  /// Candidates may be split between devices only when they are the same model.
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return cuda::interchangeable(a, b); }

  /// A compiled kernel: the cubin (or PTX, for a virtual `-arch=compute_XY`) and its symbol.
  struct binary {
    std::string image;        ///< cubin bytes, or PTX text when `is_ptx`
    bool is_ptx = false;
    std::string lowered_name; ///< the symbol NVRTC gave the entry (name expression)
    std::string arch;         ///< "sm_90", or what the kernel's options asked for
    std::string log;          ///< NVRTC's diagnostics (warnings), empty when clean
  };

  /// A loaded kernel, bound to one device. Copies share the module.
  using function = gpu::loaded_kernel<detail::kernel_calls>;

  /// How the backend starts.
  struct options {
    /// Open NVRTC on a background thread as soon as the driver is open (see `preload_nvrtc`).
    bool preload_nvrtc = true;
  };

  cuda_backend() : cuda_backend(options{}) {}
  explicit cuda_backend(options o) {
    (void)cuda_knobs(); // registers the CUDA knobs, so that invalidating_text() sees them in every key
    if (o.preload_nvrtc) {
      // Started once the driver is open (now, or when it opens): dlopen holds the loader's lock, so
      // opening NVRTC while libcuda is being opened would delay the driver instead of overlapping
      // with cuInit and context creation.
      cuda::detail::driver_opened_hook().store(&cuda::preload_nvrtc);
      if (cuda::detail::driver_opened().load()) cuda::preload_nvrtc();
    }
  }

  /// Every CUDA device; empty (never an error) without a driver or a device.
  [[nodiscard]] std::vector<device> devices() const { return cuda::devices(); }

  /// `cuda;nvrtc 13.0;driver 13.0;sm_90`: NVRTC's version, the driver's, and the architecture.
  /// Throws cotune::error if NVRTC cannot be loaded.
  [[nodiscard]] std::string fingerprint(const device& d) const {
    const auto* lib = try_driver();
    return fmt::format("cuda;nvrtc {};driver {};{}", nvrtc().version_text(),
                       lib ? lib->version_text() : std::string("none"), d.arch());
  }

  /// The physical device: "cuda:pci:0000:3b:00.0" (the ordinal only when the driver gave no PCI id),
  /// so that every tuner measuring on one GPU shares its device thread.
  [[nodiscard]] std::string device_key(const device& d) const {
    return d.pci_bus_id.empty() ? fmt::format("cuda:ordinal:{}", d.ordinal) : "cuda:pci:" + d.pci_bus_id;
  }

  /// "NVIDIA H200 (CUDA device 0, sm_90)".
  [[nodiscard]] std::string device_name(const device& d) const {
    return fmt::format("{} (CUDA device {}, {})", d.name.empty() ? std::string("unnamed device") : d.name, d.ordinal,
                       d.arch());
  }

  /// The architecture a kernel is compiled for on `d`: the kernel's own `-arch` option (from
  /// kernel_source::options or COTUNE_NVRTC_OPTIONS) if it has one, else `d.arch()`.
  [[nodiscard]] std::string target_arch(const kernel_source& k, const device& d) const {
    if (auto a = detail::requested_arch(k.options)) return *a;
    if (auto a = detail::requested_arch(gpu::split_options(cuda_knobs().nvrtc_options.get()))) return *a;
    return d.arch();
  }

  /// The NVRTC options for `k` under `c` on `d` (without the toolkit's include directory, which
  /// `compile` appends). Exposed for tests and `--debug`.
  [[nodiscard]] std::vector<std::string> options_for(const kernel_source& k, const config& c, const device& d) const {
    std::vector<std::string> out;
    const auto extra = gpu::split_options(cuda_knobs().nvrtc_options.get());
    if (!detail::requested_arch(k.options) && !detail::requested_arch(extra)) out.push_back("-arch=" + d.arch());
    gpu::add_config_macros(out, c, d.warp_size, /*warp_size_macro=*/false);
    const auto& launch = c.launch();
    if (launch.maxnreg) out.push_back(fmt::format("--maxrregcount={}", *launch.maxnreg));
    if (knobs().runtime.debug.get()) out.push_back("-lineinfo");
    for (const auto& o : k.options) out.push_back(o);
    for (const auto& dir : k.include_dirs) out.push_back("--include-path=" + dir);
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  /// What a binary is made from: NVRTC's version, the target architecture, the kernel (source, entry
  /// or name expression), the config's canonical text and every NVRTC option. The toolkit's include
  /// directory is left out: its headers belong to the NVRTC version, and leaving its path out lets
  /// machines with the toolkit in different places share cubins.
  [[nodiscard]] binary_recipe binary_key(const kernel_source& k, const config& c, const device& d) const {
    const std::string arch = target_arch(k, d);
    binary_recipe r{"cuda", {"nvrtc " + nvrtc().version_text(), arch, k.digest(), k.entry, c.text()},
                    k.name + (arch.starts_with("compute_") ? ".ptx" : ".cubin"), /*has_meta=*/true};
    for (auto& o : options_for(k, c, d)) r.ingredients.push_back(std::move(o));
    return r;
  }

  /// Compiles `k` under `c` for `d`'s architecture (always: caching is the binary cache's). Thread-safe;
  /// touches no device state, so `d` may be a hand-made description on a machine without a GPU.
  /// Throws compile_error (NVRTC's log and the config), out_of_resources (ptxas found too much
  /// static shared memory), timeout_error (past COTUNE_COMPILE_TIMEOUT_MS, or `stop` requested) or
  /// cotune::error (NVRTC missing). A compile in its own process (the `cuda.compile_processes` knob,
  /// on by default) is killed midway; an in-process one only sees `stop` before it starts.
  [[nodiscard]] binary compile(const kernel_source& k, const config& c, const device& d,
                               std::stop_token stop = {}) const {
    const auto& nv = nvrtc();
    const gpu::rtc_names names{"cuda backend", "NVRTC", nv.version_text()};
    gpu::check_kernel(names, k);
    const std::string arch = target_arch(k, d);

    if (arch == d.arch() && !nv.supports(d.cc.major * 10 + d.cc.minor))
      throw compile_error(fmt::format("cuda backend: NVRTC {} cannot compile for {} (device {}); it supports {}; use "
                                      "a CUDA toolkit that supports this GPU (COTUNE_LIBNVRTC_PATH)",
                                      nv.version_text(), arch, device_name(d), supported_text(nv)),
                          "");
    if (stop.stop_requested()) throw gpu::compile_cancelled(names, k, c, arch);
    auto opts = options_for(k, c, d);
    if (!nv.toolkit_include_dir().empty()) opts.push_back("--include-path=" + nv.toolkit_include_dir().string());
    const std::int64_t timeout_ms = knobs().autotuning.compile_timeout_ms.get();
    const auto deadline = timeout_ms > 0 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)
                                         : std::chrono::steady_clock::time_point::max();
    auto out = nv.compile(k.code, k.name + ".cu", opts, k.entry, deadline, stop);
    gpu::throw_if_stopped_or_crashed(out, names, k, c, arch, timeout_ms);
    if (!out.ok) {
      if (auto overflow = detail::shared_overflow(out.log))
        throw out_of_resources("shared memory", overflow->first, overflow->second);
      throw gpu::does_not_compile(out, names, k, c, arch, opts);
    }
    return binary{std::move(out.image), out.is_ptx, std::move(out.lowered_name), arch, std::move(out.log)};
  }

  /// The cubin as the binary cache stores it, its symbol, architecture and log as meta (JSON).
  [[nodiscard]] binary_image to_image(const binary& bin) const {
    return {bin.image, gpu::rtc_meta{bin.lowered_name, bin.arch, bin.log, bin.is_ptx}.json(), {}};
  }
  [[nodiscard]] std::optional<binary> from_image(binary_image img) const {
    auto meta = gpu::rtc_meta::from_json(img.meta);
    if (img.bytes.empty() || !meta) return std::nullopt;
    return binary{std::move(img.bytes), meta->is_ptx, std::move(meta->lowered_name), std::move(meta->arch),
                  std::move(meta->log)};
  }

  /// Loads the binary into `d`'s primary context and checks its resources before any launch:
  /// threads per block (device limit, registers x threads, the kernel's own limit) and static
  /// shared memory. Throws out_of_resources naming the resource, launch_error otherwise.
  [[nodiscard]] function load(const binary& bin, const kernel_source& k, const config& c, const device& d) const {
    const device_context* ctx = nullptr;
    try {
      ctx = &driver().context(d.ordinal);
    } catch (const error& e) {
      throw launch_error(fmt::format("cuda backend: cannot load kernel '{}' on {}: {}", k.name, device_name(d), e.what()));
    }
    return gpu::load_kernel<detail::kernel_calls>(
        *ctx, bin.image, bin.lowered_name,
        fmt::format("the binary is {} for {}", bin.is_ptx ? "PTX" : "a cubin", bin.arch), k, c,
        {.name = device_name(d),
         .warp_size = d.warp_size,
         .resources = {d.max_threads_per_block, std::int64_t{d.max_registers_per_block}, d.max_shared_per_block_optin},
         .shared_without_opt_in = d.max_shared_per_block,
         .limits = d.limits()});
  }

  /// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
  /// `f`'s module, through cuModuleGetGlobal, or nothing when the module has none. Its copies go to the
  /// device's stream and wait for it (`tune_options::on_load` runs before the module's first launch).
  [[nodiscard]] std::optional<module_global> find_global(const function& f, std::string_view name) const {
    return gpu::find_global(f, name);
  }

  /// A caller's stream (`autotuner::on(stream)`); it must belong to the device's primary context.
  using stream_type = CUstream;

  /// Launches `f` on `grid` (block from the grid, else from its config) on the device's stream. Each
  /// argument is passed as `cotune::kernel_arg(arg)`: device spans and buffers as their device
  /// address, the rest by value; the kernel's parameters must match these types. Dynamic shared
  /// memory above 48 KB is opted into once per function; above the device's limit it is
  /// out_of_resources, as is a grid or block dimension beyond the device's (named in the error).
  template <class... Args>
  void launch(const function& f, const launch_grid& grid, Args&... args) const {
    launch_on(f.context->stream(), f, grid, args...);
  }

  /// `launch` on the caller's `stream`: in order with the caller's work there, and capturable into a
  /// CUDA graph (the launch makes no other driver call than cuLaunchKernel once the function's
  /// dynamic shared memory is opted into).
  template <class... Args>
  void launch_on(CUstream stream, const function& f, const launch_grid& grid, Args&... args) const {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container (std::vector, std::array, std::span) cannot be a CUDA kernel's argument: its "
                  "memory is on the host; copy it to a cuda::device_buffer, or wrap device memory you own with "
                  "cuda::device_view(ptr, count, device)");
    gpu::with_kernel_params([&](void** params) { launch_raw_on(stream, f, grid, params); }, args...);
  }

  /// Launches with a prepared parameter array (`params[i]` points at argument i).
  void launch_raw(const function& f, const launch_grid& grid, void** params) const {
    launch_raw_on(f.context->stream(), f, grid, params);
  }

  /// `launch_raw` on the caller's `stream`.
  void launch_raw_on(CUstream stream, const function& f, const launch_grid& grid, void** params) const {
    gpu::launch_kernel(stream, f, grid, params);
  }

  /// Starts `d`'s isolation worker, if it is not running, without waiting for it (a tuning that will
  /// measure in isolation calls this first, so that the worker's start overlaps its compiles).
  void prestart_isolation(const device& d) const noexcept {
    gpu::detail::isolation_pool::of<detail::isolation_worker_kind>().prestart(d.ordinal);
  }

  /// Runs `bin` (loaded and checked here as `f`) in `f`'s device's isolation worker: once, or measured
  /// with `o` (`task.timed`), zeroing and restoring the flagged arguments there. Device memory goes as
  /// CUDA IPC handles, the rest by value. `refused` (and a warning, once) when an argument's memory
  /// cannot be shared or no worker can start: the caller measures in-process then. Waits for the
  /// device's cotune stream first, so that the worker sees the arguments as the caller left them.
  template <class... Args>
  [[nodiscard]] cotune::detail::isolated_result run_in_worker(const binary& bin, const function& f,
                                                              const launch_grid& grid,
                                                              const cotune::detail::worker_task& task,
                                                              const bench_options& o, Args&... args) const {
    static_assert((!HostRange<std::remove_cvref_t<Args>> && ...),
                  "a host container cannot be a CUDA kernel's argument (see launch_on)");
    return gpu::detail::run_in_worker<detail::isolation_worker_kind, detail::ipc_sharing>(
        f, bin.image, bin.lowered_name, grid, task, o, cuda_knobs().flush_factor.get(), cuda_knobs().graph.get(), args...);
  }

  /// True while `stream` is being captured into a graph (an implicit capture of the legacy stream
  /// counts); tuning must not run then. Throws launch_error when the driver cannot tell.
  [[nodiscard]] bool is_capturing(CUstream stream) const {
    const auto* lib = try_driver();
    if (!lib) return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUresult r = lib->api().stream_is_capturing(stream, &status);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;
    if (r != CUDA_SUCCESS)
      throw launch_error(fmt::format("cuda backend: cuStreamIsCapturing failed: {}", lib->error_text(r)));
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  /// Waits for the work queued on the caller's `stream` (before a tuning reads or writes its buffers).
  void synchronize_stream(CUstream stream) const {
    const auto* lib = try_driver();
    if (!lib) return;
    if (CUresult r = lib->api().stream_synchronize(stream); r != CUDA_SUCCESS)
      throw launch_error(fmt::format("cuda backend: waiting for the caller's stream failed: {}", lib->error_text(r)));
  }

  /// Waits for everything cotune queued on `f`'s device.
  void synchronize(const function& f) const {
    f.context->make_current();
    f.context->synchronize("synchronizing");
  }

  /// Warnings about how compiles run (NVRTC's compile server could not start, or was lost) and how
  /// candidates are isolated (an isolation worker could not start, an argument it cannot reach) since the
  /// last call; none without NVRTC.
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    const auto* nv = try_nvrtc();
    auto out = nv ? nv->take_warnings() : std::vector<std::string>{};
    for (auto& w : detail::isolation_workers().take_warnings()) out.push_back(std::move(w));
    return out;
  }

  /// The stream cotune launches on for `d` (for the caller's own copies and launches in order with ours).
  [[nodiscard]] CUstream stream(const device& d) const { return driver().context(d.ordinal).stream(); }

  /// Waits for everything cotune queued on `d`; a kernel's failure surfaces here as launch_error.
  void synchronize(const device& d) const {
    const auto& ctx = driver().context(d.ordinal);
    ctx.make_current();
    ctx.synchronize("synchronizing");
  }

private:
  static std::string supported_text(const nvrtc_library& nv) {
    std::string out;
    for (int a : nv.supported_archs()) out += fmt::format("{}sm_{}", out.empty() ? "" : " ", a);
    return out.empty() ? std::string("(unknown)") : out;
  }

  // Names the dimension and the limit when the driver refuses a launch's geometry (it says only
  // "invalid value"); the checks cost nothing on launches that succeed.
};

// The optional capabilities the CUDA backend means to offer (a misspelt member fails here).
static_assert(HasDeviceKey<cuda_backend> && StoppableCompiler<cuda_backend> && ComparesDevices<cuda_backend> &&
              DeclaresBenchmarker<cuda_backend> && ReportsWarnings<cuda_backend> && LaunchesOnStreams<cuda_backend> &&
              FindsModuleGlobals<cuda_backend>);

static_assert(Backend<cuda_backend>);

} // namespace cotune::cuda
