#pragma once
/// \file `cotune::gpu::rtc_backend<Api>`: the GPU backend, written once for every runtime whose
/// kernels are compiled at run time (NVRTC + the CUDA driver, hiprtc + the HIP runtime): compile, load,
/// launch, streams, isolation and the binary cache's images. `cuda::cuda_backend` and
/// `hip::hip_backend` are this class over their runtime's API table, which names what differs and
/// nothing else (cuda/cuda_backend.hpp and hip/hip_backend.hpp have one each):
///
///     using device = ...; using benchmarker = ...;     // the runtime's device and benchmarker types
///     using kernel_calls = ...;                         // gpu/loaded_kernel.hpp's KernelCalls
///     using sharing = ...;                              // how device memory reaches a worker (gpu/isolation.hpp)
///     static constexpr const detail::worker_kind& worker_kind;
///     static constexpr rtc_runtime_names names;         // "cuda", "CUDA", "cuda backend", "NVRTC", ...
///     static constexpr bool has_ptx;                    // a binary may be PTX text (CUDA's compute_XY)
///     static const auto& compiler(); static const auto* try_compiler();      // NVRTC, hiprtc
///     static const auto* try_library(); static const context& context_of(int ordinal);
///     static const auto& knobs();                       // its knob group (flush_factor, graph)
///     static std::string compiler_options_text();       // the compiler-options knob (COTUNE_NVRTC_OPTIONS)
///     static constexpr bool warp_size_macro;            // -DCOTUNE_WARP_SIZE (HIP: wavefronts vary)
///     static std::string binary_suffix(const std::string& arch);  // ".cubin", ".ptx", ".hsaco"
///     static std::vector<device> devices(); static bool interchangeable(const device&, const device&);
///     static std::optional<std::string> requested_arch(const std::vector<std::string>& options);
///     static void add_options(std::vector<std::string>&, const config&);    // runtime-only options
///     static void check_target(compiler, const device&, const std::string& arch, std::string_view name);
///     static void add_compile_options(compiler, std::vector<std::string>&);  // the toolkit's headers
///     static void check_failure(const rtc_output&);     // a failed compile that is not a compile_error
///     static std::string image_text(const rtc_binary&); // "a cubin for sm_90", for load errors
///     static device_resources resources(const device&);
///     static result is_capturing(const library&, stream, bool* capturing);
///     template <class... Args> static constexpr void check_arguments();  // rejects host containers
///
/// Every message names the runtime through `names`.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/launch_geometry.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/precompiled_file.hpp>
#include <cotune/gpu/rtc_compile.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::gpu {

/// How a runtime is named: in keys ("cuda"), messages ("CUDA device 0", "cuda backend: ..."), its
/// compiler, its library, the files of its binaries and sources, and its architecture flag.
struct rtc_runtime_names {
  std::string_view key;           ///< "cuda": fingerprints, device keys, the binary cache's folder
  std::string_view device_word;   ///< "CUDA": "NVIDIA H200 (CUDA device 0, sm_90)"
  std::string_view backend;       ///< "cuda backend": begins every message
  std::string_view compiler;      ///< "NVRTC"
  std::string_view compiler_key;  ///< "nvrtc": fingerprints and binary keys
  std::string_view library_key;   ///< "driver": fingerprints
  std::string_view source_suffix; ///< ".cu": the name a compile gives the source
  std::string_view arch_flag;     ///< "-arch=": the option that names the target
  std::string_view include_flag;  ///< "--include-path="
  std::string_view debug_flag;    ///< "-lineinfo" (COTUNE_DEBUG)
  std::string_view capture_call;  ///< "cuStreamIsCapturing"
};

/// A compiled kernel: the image (a cubin or code object, or PTX text when `is_ptx`) and its symbol.
struct rtc_binary {
  std::string image;        ///< the binary's bytes, or PTX text when `is_ptx`
  bool is_ptx = false;      ///< only CUDA's virtual architectures (`-arch=compute_XY`)
  std::string lowered_name; ///< the symbol the compiler gave the entry (a name expression's instance)
  std::string arch;         ///< "sm_90", "gfx90a:sramecc+:xnack-", or what the kernel's options asked for
  std::string log;          ///< the compiler's diagnostics (warnings), empty when clean
};

/// Compiles with the runtime's compiler, loads and launches with its module API; satisfies
/// `cotune::Backend`. `launch` takes any arguments, device spans passing their address.
template <class Api>
class rtc_backend {
public:
  using device = typename Api::device;
  /// What an autotuner over this backend measures with unless told otherwise (the runtime's
  /// benchmarker header, or its umbrella, must be included to use it).
  using default_benchmarker_type = typename Api::benchmarker;
  /// Candidates can be measured in an isolation worker process per device (COTUNE_ISOLATE;
  /// gpu/isolation.hpp): `run_in_worker`.
  static constexpr bool worker_isolation = true;
  /// Candidates may be split between devices only when they are the same model.
  [[nodiscard]] static bool interchangeable(const device& a, const device& b) { return Api::interchangeable(a, b); }

  using binary = rtc_binary;
  /// A loaded kernel, bound to one device. Copies share the module.
  using function = loaded_kernel<typename Api::kernel_calls>;
  /// A caller's stream (`autotuner::on(stream)`); it must belong to the device (its primary context).
  using stream_type = typename Api::kernel_calls::stream;

  rtc_backend() { (void)Api::knobs(); } // registers the runtime's knobs, so that every key sees them

  /// Every device of the runtime; empty (never an error) without a runtime or a device.
  [[nodiscard]] std::vector<device> devices() const { return Api::devices(); }

  /// `cuda;nvrtc 13.0;driver 13.0;sm_90`: the compiler's version, the runtime's, and the architecture;
  /// with a precompiled file (COTUNE_PRECOMPILED_FILE) its digest is appended, and with
  /// COTUNE_PRECOMPILED=only the compiler is named `unused` (and not loaded). Throws cotune::error if
  /// the compiler cannot be loaded.
  [[nodiscard]] std::string fingerprint(const device& d) const {
    const auto* lib = Api::try_library();
    const auto mode = current_precompiled_mode();
    auto out = fmt::format("{};{} {};{} {};{}", n().key, n().compiler_key, compiler_version(), n().library_key,
                           lib ? lib->version_text() : std::string("none"), d.arch());
    if (mode != precompiled_mode::off) {
      try {
        out += ";precompiled " + precompiled_file::shared(*cotune::knobs().runtime.precompiled_file.get()).digest();
      } catch (const precompiled_file_error&) {
        out += ";precompiled unreadable";
      }
    }
    return out;
  }

  /// The physical device: "cuda:pci:0000:3b:00.0" (the ordinal only when the runtime gave no PCI id),
  /// so that every tuner measuring on one GPU shares its device thread.
  [[nodiscard]] std::string device_key(const device& d) const {
    return d.pci_bus_id.empty() ? fmt::format("{}:ordinal:{}", n().key, d.ordinal)
                                : fmt::format("{}:pci:{}", n().key, d.pci_bus_id);
  }

  /// "NVIDIA H200 (CUDA device 0, sm_90)".
  [[nodiscard]] std::string device_name(const device& d) const {
    return fmt::format("{} ({} device {}, {})", d.name.empty() ? std::string("unnamed device") : d.name,
                       n().device_word, d.ordinal, d.arch());
  }

  /// The architecture a kernel is compiled for on `d`: the kernel's own architecture option (from
  /// kernel_source::options or the runtime's compiler-options knob) if it has one, else `d.arch()`.
  [[nodiscard]] std::string target_arch(const kernel_source& k, const device& d) const {
    if (auto a = Api::requested_arch(k.options)) return *a;
    if (auto a = Api::requested_arch(extra_options())) return *a;
    return d.arch();
  }

  /// The compiler's options for `k` under `c` on `d` (without the toolkit's include directory, which
  /// `compile` appends). Exposed for tests and `--debug`.
  [[nodiscard]] std::vector<std::string> options_for(const kernel_source& k, const config& c, const device& d) const {
    return options(k, c, d, /*with_arch=*/true);
  }

  /// `options_for` without the architecture flag it adds for `d`: what a precompiled entry is made
  /// from besides the kernel and config (precompiled_recipe), whatever the architecture.
  [[nodiscard]] std::vector<std::string> precompiled_options(const kernel_source& k, const config& c, const device& d) const {
    return options(k, c, d, /*with_arch=*/false);
  }

  /// The binary of `k` under `c` for `d` from the precompiled file (COTUNE_PRECOMPILED_FILE), when the
  /// file holds one made from what `compile` would compile; nothing when it does not and the runtime
  /// compiler may (COTUNE_PRECOMPILED=prefer; an entry made from something else, or a file that cannot
  /// be read, is also said in a warning). With COTUNE_PRECOMPILED=only such a candidate throws
  /// compile_error naming its config, the architecture and the file, and why. The binary cache asks
  /// this before it compiles (its `LoadsPrebuilt` capability); nothing is stored for such a binary.
  [[nodiscard]] std::optional<binary> prebuilt(const kernel_source& k, const config& c, const device& d) const {
    const auto mode = current_precompiled_mode();
    if (mode == precompiled_mode::off) return std::nullopt;
    const std::string path = *cotune::knobs().runtime.precompiled_file.get();
    const std::string arch = target_arch(k, d);
    const bool only = mode == precompiled_mode::only;
    auto missing = [&](std::string_view why, const std::string& log = {}) -> std::optional<binary> {
      if (only)
        throw compile_error(fmt::format("{}: kernel '{}' with config {{{}}} for {}: COTUNE_PRECOMPILED=only forbids "
                                        "compiling it with {}, and precompiled file '{}' {}; build the file for this "
                                        "config and architecture (cotune_precompile), or set COTUNE_PRECOMPILED=prefer",
                                        n().backend, k.name, c.text(), arch, n().compiler, path, why),
                            log);
      return std::nullopt;
    };
    const precompiled_file* file = nullptr;
    try {
      file = &precompiled_file::shared(path);
    } catch (const precompiled_file_error& e) {
      if (!only) warn_precompiled(fmt::format("{}: {}; its kernels are compiled with {} instead", n().backend, e.what(), n().compiler));
      return missing(fmt::format("cannot be used: {}", e.what()));
    }
    const precompiled_entry* e = file->find(k.name, c.text(), arch);
    if (!e) return missing("has no entry for it");
    if (e->recipe != precompiled_recipe(k, c, precompiled_options(k, c, d))) {
      const auto why = fmt::format("has an entry for it (built for {}) made from another source, entry or compile "
                                   "options than this program's (its recipe digest differs), which is not used",
                                   e->arch);
      if (!only)
        warn_precompiled(fmt::format("{}: precompiled file '{}' {} for kernel '{}' with config {{{}}}; compiling it with {}",
                                     n().backend, path, why, k.name, c.text(), n().compiler));
      return missing(why);
    }
    if (!e->ok) return missing(fmt::format("holds {}'s failure to compile it:\n{}", e->compiler, e->log), e->log);
    return binary{e->image, false, e->lowered_name, e->arch, e->log};
  }

  /// What a binary is made from: the compiler's version, the target architecture, the kernel (source,
  /// entry or name expression), the config's canonical text and every option. The toolkit's include
  /// directory is left out: its headers belong to the compiler's version, and leaving its path out lets
  /// machines with the toolkit in different places share binaries.
  [[nodiscard]] binary_recipe binary_key(const kernel_source& k, const config& c, const device& d) const {
    const std::string arch = target_arch(k, d);
    binary_recipe r{std::string(n().key),
                    {fmt::format("{} {}", n().compiler_key, compiler_version()), arch, k.digest(), k.entry,
                     c.text()},
                    k.name + Api::binary_suffix(arch),
                    /*has_meta=*/true};
    for (auto& o : options_for(k, c, d)) r.ingredients.push_back(std::move(o));
    return r;
  }

  /// Compiles `k` under `c` for `d`'s architecture (always: caching is the binary cache's). Thread-safe;
  /// touches no device state, so `d` may be a hand-made description on a machine without a GPU.
  /// Throws compile_error (the compiler's log, the config and the architecture), out_of_resources (the
  /// compiler found too much static shared memory), timeout_error (past COTUNE_COMPILE_TIMEOUT_MS, or
  /// `stop` requested), compiler_crashed, or cotune::error (the compiler missing). A compile in its own
  /// process (the runtime's `compile_processes` knob) is killed midway; an in-process one only sees
  /// `stop` before it starts.
  [[nodiscard]] binary compile(const kernel_source& k, const config& c, const device& d, std::stop_token stop = {}) const {
    const auto& rtc = Api::compiler();
    const rtc_names names{n().backend, n().compiler, rtc.version_text()};
    check_kernel(names, k);
    const std::string arch = target_arch(k, d);
    Api::check_target(rtc, d, arch, device_name(d));
    if (stop.stop_requested()) throw compile_cancelled(names, k, c, arch);
    auto opts = options_for(k, c, d);
    Api::add_compile_options(rtc, opts);
    const std::int64_t timeout_ms = cotune::knobs().autotuning.compile_timeout_ms.get();
    const auto deadline = timeout_ms > 0 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)
                                         : std::chrono::steady_clock::time_point::max();
    auto out = rtc.compile(k.code, k.name + std::string(n().source_suffix), opts, k.entry, deadline, stop);
    throw_if_stopped_or_crashed(out, names, k, c, arch, timeout_ms);
    if (!out.ok) {
      Api::check_failure(out);
      throw does_not_compile(out, names, k, c, arch, opts);
    }
    return binary{std::move(out.image), out.is_ptx, std::move(out.lowered_name), arch, std::move(out.log)};
  }

  /// The binary as the binary cache stores it: its symbol, architecture and log as meta (JSON).
  [[nodiscard]] binary_image to_image(const binary& bin) const {
    return {bin.image, rtc_meta{bin.lowered_name, bin.arch, bin.log, bin.is_ptx}.json(), {}};
  }
  [[nodiscard]] std::optional<binary> from_image(binary_image img) const {
    auto meta = rtc_meta::from_json(img.meta);
    if (img.bytes.empty() || !meta || (meta->is_ptx && !Api::has_ptx)) return std::nullopt;
    return binary{std::move(img.bytes), meta->is_ptx, std::move(meta->lowered_name), std::move(meta->arch),
                  std::move(meta->log)};
  }

  /// Loads the binary on `d` (its primary context) and checks its resources before any launch:
  /// threads per block (device limit, registers x threads, the kernel's own limit) and static shared
  /// memory. Throws out_of_resources naming the resource, launch_error otherwise.
  [[nodiscard]] function load(const binary& bin, const kernel_source& k, const config& c, const device& d) const {
    return load_kernel<typename Api::kernel_calls>(context_for(k, d), bin.image, bin.lowered_name, Api::image_text(bin),
                                                   k, c, kernel_device_of(d));
  }

  /// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
  /// `f`'s module, or nothing when the module has none. Its copies go to the device's stream and wait
  /// for it (`tune_options::on_load` runs before the module's first launch).
  [[nodiscard]] std::optional<module_global> find_global(const function& f, std::string_view name) const {
    return gpu::find_global(f, name);
  }

  /// Launches `f` on `grid` (block from the grid, else from its config) on the device's stream. Each
  /// argument is passed as `cotune::kernel_arg(arg)`: device spans and buffers as their device
  /// address, the rest by value; the kernel's parameters must match these types. Dynamic shared
  /// memory beyond what needs no opt-in is opted into once per function; above the device's limit it
  /// is out_of_resources, as is a grid or block dimension beyond the device's (named in the error).
  template <class... Args>
  void launch(const function& f, const launch_grid& grid, Args&... args) const {
    launch_on(f.context->stream(), f, grid, args...);
  }

  /// `launch` on the caller's `stream`: in order with the caller's work there, and capturable into a
  /// graph (the launch makes no other runtime call than the kernel launch once the function's dynamic
  /// shared memory is opted into).
  template <class... Args>
  void launch_on(stream_type stream, const function& f, const launch_grid& grid, Args&... args) const {
    Api::template check_arguments<Args...>();
    check_devices(f, args...);
    with_kernel_params([&](void** params) { launch_raw_on(stream, f, grid, params); }, args...);
  }

  /// Launches with a prepared parameter array (`params[i]` points at argument i).
  void launch_raw(const function& f, const launch_grid& grid, void** params) const {
    launch_raw_on(f.context->stream(), f, grid, params);
  }

  /// `launch_raw` on the caller's `stream`.
  void launch_raw_on(stream_type stream, const function& f, const launch_grid& grid, void** params) const {
    launch_kernel(stream, f, grid, params);
  }

  /// Starts `d`'s isolation worker, if it is not running, without waiting for it (a tuning that will
  /// measure in isolation calls this first, so that the worker's start overlaps its compiles).
  void prestart_isolation(const device& d) const noexcept { detail::isolation_pool::of<Api::worker_kind>().prestart(d.ordinal); }

  /// Runs `bin` (loaded and checked here as `f`) in `f`'s device's isolation worker: once, or measured
  /// with `o` (`task.timed`), zeroing and restoring the flagged arguments there. Device memory goes as
  /// IPC handles, the rest by value. `refused` (and a warning, once) when an argument's memory cannot be
  /// shared or no worker can start: the caller measures in-process then. Waits for the device's cotune
  /// stream first, so that the worker sees the arguments as the caller left them.
  template <class... Args>
  [[nodiscard]] cotune::detail::isolated_result run_in_worker(const binary& bin, const function& f,
                                                              const launch_grid& grid,
                                                              const cotune::detail::worker_task& task,
                                                              const bench_options& o, Args&... args) const {
    Api::template check_arguments<Args...>();
    check_devices(f, args...);
    return detail::run_in_worker<Api::worker_kind, typename Api::sharing>(
        f, bin.image, bin.lowered_name, grid, task, o, Api::knobs().flush_factor.get(), Api::knobs().graph.get(), args...);
  }

  /// True while `stream` is being captured into a graph (an implicit capture of the legacy or null
  /// stream counts); tuning must not run then. Throws launch_error when the runtime cannot tell.
  [[nodiscard]] bool is_capturing(stream_type stream) const {
    const auto* lib = Api::try_library();
    if (!lib) return false;
    bool capturing = false;
    if (const auto r = Api::is_capturing(*lib, stream, &capturing); !Api::kernel_calls::ok(r))
      throw launch_error(fmt::format("{}: {} failed: {}", n().backend, n().capture_call, lib->error_text(r)));
    return capturing;
  }

  /// Waits for the work queued on the caller's `stream` (before a tuning reads or writes its buffers).
  void synchronize_stream(stream_type stream) const {
    const auto* lib = Api::try_library();
    if (!lib) return;
    if (const auto r = lib->api().stream_synchronize(stream); !Api::kernel_calls::ok(r))
      throw launch_error(fmt::format("{}: waiting for the caller's stream failed: {}", n().backend, lib->error_text(r)));
  }

  /// Waits for everything cotune queued on `f`'s device.
  void synchronize(const function& f) const {
    f.context->make_current();
    f.context->synchronize("synchronizing");
  }

  /// Warnings about how compiles run (the compiler's compile server could not start, or was lost) and
  /// how candidates are isolated (an isolation worker could not start, an argument it cannot reach)
  /// since the last call; none without the compiler.
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    const auto* rtc = current_precompiled_mode() == precompiled_mode::only ? nullptr : Api::try_compiler();
    auto out = rtc ? rtc->take_warnings() : std::vector<std::string>{};
    for (auto& w : take_precompiled_warnings()) out.push_back(std::move(w));
    for (auto& w : detail::isolation_pool::of<Api::worker_kind>().take_warnings()) out.push_back(std::move(w));
    return out;
  }

  /// The stream cotune launches on for `d` (for the caller's own copies and launches in order with ours).
  [[nodiscard]] stream_type stream(const device& d) const { return Api::context_of(d.ordinal).stream(); }

  /// Waits for everything cotune queued on `d`; a kernel's failure surfaces here as launch_error.
  void synchronize(const device& d) const {
    const auto& ctx = Api::context_of(d.ordinal);
    ctx.make_current();
    ctx.synchronize("synchronizing");
  }

protected:
  /// `d`'s context, for loading kernel `k`; launch_error when the device cannot be used.
  [[nodiscard]] const typename Api::context& context_for(const kernel_source& k, const device& d) const {
    try {
      return Api::context_of(d.ordinal);
    } catch (const error& e) {
      throw launch_error(fmt::format("{}: cannot load kernel '{}' on {}: {}", n().backend, k.name, device_name(d), e.what()));
    }
  }
  /// What a loaded kernel is checked against on `d`.
  [[nodiscard]] kernel_device kernel_device_of(const device& d) const {
    return {.name = device_name(d),
            .warp_size = d.warp_size,
            .resources = Api::resources(d),
            .shared_without_opt_in = d.max_shared_per_block,
            .limits = d.limits()};
  }

  /// Refuses an argument bound to another device than `f`'s (cotune::DeviceBoundBuffer: a DLPack
  /// tensor). The tuner refuses one before tuning; this is for a tuned key called with a tensor
  /// elsewhere. Nothing for argument types that are not bound to a device.
  template <class... Args>
  static void check_devices(const function& f, const Args&... args) {
    if constexpr ((DeviceBoundBuffer<std::remove_cvref_t<Args>> || ...)) {
      std::size_t i = 0;
      auto check = [&](const auto& a) {
        const std::size_t at = i++;
        if constexpr (DeviceBoundBuffer<std::remove_cvref_t<decltype(a)>>)
          if (a.device_ordinal() != f.context->ordinal())
            throw launch_error(fmt::format("{}: cannot launch kernel '{}' on {} device {}: argument {} is in the memory "
                                           "of device {}; move it there, or tune on its device (tune_options::device)",
                                           n().backend, f.module->kernel_name, n().device_word, f.context->ordinal(),
                                           at, a.device_ordinal()));
      };
      (check(args), ...);
    }
  }
private:
  [[nodiscard]] static constexpr const rtc_runtime_names& n() noexcept { return Api::names; }

  [[nodiscard]] static std::vector<std::string> extra_options() { return split_options(Api::compiler_options_text()); }
  /// `options_for`, with or without the architecture flag it adds for `d`.
  [[nodiscard]] std::vector<std::string> options(const kernel_source& k, const config& c, const device& d, bool with_arch) const {
    std::vector<std::string> out;
    const auto extra = extra_options();
    if (with_arch && !Api::requested_arch(k.options) && !Api::requested_arch(extra))
      out.push_back(fmt::format("{}{}", n().arch_flag, d.arch()));
    add_config_macros(out, c, d.warp_size, /*warp_size_macro=*/Api::warp_size_macro);
    Api::add_options(out, c);
    if (cotune::knobs().runtime.debug.get()) out.emplace_back(n().debug_flag);
    for (const auto& o : k.options) out.push_back(o);
    for (const auto& dir : k.include_dirs) out.push_back(fmt::format("{}{}", n().include_flag, dir));
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  /// The compiler's version; "unused" with COTUNE_PRECOMPILED=only, which never loads it.
  [[nodiscard]] static std::string compiler_version() {
    return current_precompiled_mode() == precompiled_mode::only ? std::string("unused") : Api::compiler().version_text();
  }
};

} // namespace cotune::gpu
