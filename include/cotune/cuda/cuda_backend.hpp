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
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda.h>
#include <fmt/format.h>

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
#include <cotune/gpu/rtc_backend.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::cuda {

namespace detail {

/// A loaded module, unloaded when the last function that uses it goes.
struct loaded_module {
  const device_context* context;
  CUmodule module;
  std::string kernel_name;
  std::string config_text;
  /// Dynamic shared memory the function may use now (raised by opting in, never lowered).
  std::atomic<int> dynamic_shared_allowed{0};
  std::mutex opt_in_mutex; ///< serialises opting in, so the attribute only grows

  loaded_module(const device_context& ctx, CUmodule m, std::string name, std::string cfg)
      : context(&ctx), module(m), kernel_name(std::move(name)), config_text(std::move(cfg)) {}
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;
  ~loaded_module() {
    // Errors are ignored: after a sticky error the context is lost and the module with it.
    CUcontext current = nullptr;
    const auto& api = context->api();
    if (api.ctx_get_current(&current) != CUDA_SUCCESS || current != context->context())
      (void)api.ctx_set_current(context->context());
    (void)api.module_unload(module);
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
  /// cuda/isolation.hpp): `run_in_worker`.
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
  struct function {
    std::shared_ptr<detail::loaded_module> module;
    CUfunction handle = nullptr;
    const device_context* context = nullptr;
    unsigned threads_per_block = 0;
    block_dims block{};                  ///< the config's block shape
    int kernel_max_threads = 0;          ///< the kernel's own limit (registers, __launch_bounds__)
    launch_limits limits{};              ///< the device's, to name the dimension when a launch is refused
    int registers = 0;                   ///< per thread
    int static_shared_bytes = 0;
    int local_bytes = 0;                 ///< per thread (spills and stack)
    std::int64_t max_dynamic_shared = 0; ///< the opt-in limit minus static shared memory
  };

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
    ctx->make_current();
    const auto& api = ctx->api();
    const std::string what = fmt::format("loading kernel '{}' with config {{{}}}", k.name, c.text());
    CUmodule mod = nullptr;
    if (CUresult r = api.module_load_data(&mod, bin.image.c_str()); r != CUDA_SUCCESS) {
      if (is_sticky_error(r)) ctx->check(r, what);
      throw launch_error(fmt::format("cuda backend: {} on {} failed: {} (the binary is {} for {})", what, device_name(d),
                                     ctx->library().error_text(r), bin.is_ptx ? "PTX" : "a cubin", bin.arch));
    }
    auto module = std::make_shared<detail::loaded_module>(*ctx, mod, k.name, c.text());
    function f;
    f.module = module;
    f.context = ctx;
    if (CUresult r = api.module_get_function(&f.handle, mod, bin.lowered_name.c_str()); r != CUDA_SUCCESS)
      ctx->check(r, fmt::format("{}: cuModuleGetFunction('{}')", what, bin.lowered_name));
    auto attribute = [&](CUfunction_attribute a, const char* name) {
      int v = 0;
      ctx->check(api.func_get_attribute(&v, a, f.handle), fmt::format("{}: cuFuncGetAttribute({})", what, name));
      return v;
    };
    f.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS");
    f.static_shared_bytes = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
    f.local_bytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES");
    const int kernel_max_threads = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");

    const int threads = c.launch().threads(d.warp_size);
    f.block = c.launch().block_shape(d.warp_size);
    f.limits = d.limits();
    f.kernel_max_threads = kernel_max_threads;
    // The kernel's own limit also counts register allocation granularity and __launch_bounds__.
    gpu::check_loaded_kernel("cuda backend", c,
                             {threads, f.registers, kernel_max_threads, f.static_shared_bytes},
                             {d.max_threads_per_block, std::int64_t{d.max_registers_per_block},
                              d.max_shared_per_block_optin, "shared memory"},
                             f.block, f.limits);
    f.threads_per_block = static_cast<unsigned>(threads);
    f.max_dynamic_shared = d.max_shared_per_block_optin - f.static_shared_bytes;
    module->dynamic_shared_allowed.store(
        static_cast<int>(std::max<std::int64_t>(0, d.max_shared_per_block - f.static_shared_bytes)),
        std::memory_order_relaxed);
    return f;
  }

  /// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
  /// `f`'s module, through cuModuleGetGlobal, or nothing when the module has none. Its copies go to the
  /// device's stream and wait for it (`tune_options::on_load` runs before the module's first launch).
  [[nodiscard]] std::optional<module_global> find_global(const function& f, std::string_view name) const {
    const device_context* ctx = f.context;
    ctx->make_current();
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
    const std::string symbol(name);
    const CUresult r = ctx->api().module_get_global(&ptr, &bytes, f.module->module, symbol.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) return std::nullopt;
    ctx->check(r, fmt::format("kernel '{}' with config {{{}}}: cuModuleGetGlobal('{}')", f.module->kernel_name,
                              f.module->config_text, symbol));
    return module_global{
        static_cast<std::uintptr_t>(ptr), bytes,
        [ctx](std::uintptr_t to, const void* from, std::size_t n) { memory_runtime::upload(*ctx, to, from, n); },
        [ctx](void* to, std::uintptr_t from, std::size_t n) { memory_runtime::download(*ctx, to, from, n); }};
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
    const device_context& ctx = *f.context;
    ctx.make_current();
    if (static_cast<int>(grid.shared_bytes) > f.module->dynamic_shared_allowed.load(std::memory_order_relaxed))
      opt_in_dynamic_shared(f, grid.shared_bytes);
    const block_dims& b = grid.block ? *grid.block : f.block;
    CUresult r = ctx.api().launch_kernel(f.handle, grid.x, grid.y, grid.z, static_cast<unsigned>(b.x),
                                         static_cast<unsigned>(b.y), static_cast<unsigned>(b.z), grid.shared_bytes,
                                         stream, params, nullptr);
    if (r != CUDA_SUCCESS) [[unlikely]]
      launch_failed(ctx, r, f, grid, b);
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
    if (static_cast<std::int64_t>(grid.shared_bytes) > f.max_dynamic_shared)
      throw out_of_resources("shared memory", std::int64_t{f.static_shared_bytes} + grid.shared_bytes,
                             std::int64_t{f.static_shared_bytes} + f.max_dynamic_shared);
    const device_context& ctx = *f.context;
    detail::worker_job job;
    job.timed = task.timed;
    job.image = bin.image;
    job.symbol = bin.lowered_name;
    job.grid = {grid.x, grid.y, grid.z};
    const block_dims& b = grid.block ? *grid.block : f.block;
    job.block = {static_cast<std::uint32_t>(b.x), static_cast<std::uint32_t>(b.y), static_cast<std::uint32_t>(b.z)};
    job.shared_bytes = grid.shared_bytes;
    job.timeout_ms = task.timeout_ms;
    job.bench = o;
    job.flush_factor = cuda_knobs().flush_factor.get();
    job.graph = cuda_knobs().graph.get();
    job.batch_below_us = knobs().bench.batch_below_us.get();
    std::string why = detail::describe_arguments(ctx, task, job.params, args...);
    auto& pool = detail::isolation_pool::instance();
    if (!why.empty()) {
      cotune::detail::isolated_result out;
      out.end = cotune::detail::isolated_result::ending::refused;
      out.detail = fmt::format("COTUNE_ISOLATE: kernel '{}' is measured in-process, not in an isolation worker: {}",
                               f.module->kernel_name, why);
      pool.warn_once(out.detail);
      return out;
    }
    ctx.make_current();
    ctx.synchronize("waiting for the device before measuring in the isolation worker");
    return pool.run(ctx.ordinal(), job);
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
    for (auto& w : detail::isolation_pool::instance().take_warnings()) out.push_back(std::move(w));
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
  [[noreturn]] static void launch_failed(const device_context& ctx, CUresult r, const function& f,
                                         const launch_grid& grid, const block_dims& b) {
    if (!is_sticky_error(r)) {
      check_grid(grid, f.limits);
      check_block(b, f.limits, f.kernel_max_threads);
    }
    ctx.check(r, gpu::launch_text(f.module->kernel_name, f.module->config_text, grid, b));
    throw launch_error(fmt::format("launching kernel '{}' failed", f.module->kernel_name)); // check always throws
  }

  static void opt_in_dynamic_shared(const function& f, unsigned bytes) {
    if (static_cast<std::int64_t>(bytes) > f.max_dynamic_shared)
      throw out_of_resources("shared memory", std::int64_t{f.static_shared_bytes} + bytes,
                             std::int64_t{f.static_shared_bytes} + f.max_dynamic_shared);
    std::lock_guard lock(f.module->opt_in_mutex);
    if (static_cast<int>(bytes) <= f.module->dynamic_shared_allowed.load(std::memory_order_relaxed)) return;
    f.context->check(f.context->api().func_set_attribute(f.handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                          static_cast<int>(bytes)),
                     fmt::format("opting kernel '{}' into {} bytes of dynamic shared memory", f.module->kernel_name,
                                 bytes));
    f.module->dynamic_shared_allowed.store(static_cast<int>(bytes), std::memory_order_relaxed);
  }
};

// The optional capabilities the CUDA backend means to offer (a misspelt member fails here).
static_assert(HasDeviceKey<cuda_backend> && StoppableCompiler<cuda_backend> && ComparesDevices<cuda_backend> &&
              DeclaresBenchmarker<cuda_backend> && ReportsWarnings<cuda_backend> && LaunchesOnStreams<cuda_backend> &&
              FindsModuleGlobals<cuda_backend>);

static_assert(Backend<cuda_backend>);

} // namespace cotune::cuda
