#pragma once
/// \file `cotune::gpu::compiled_backend<Api, Signature>`: the GPU backend for kernels the program's own
/// build compiled (nvcc or hipcc template instantiations, one per config: gpu/compiled_kernels.hpp).
/// There is nothing to compile: `compile` finds the config's candidate, `load` finds its device
/// function (cudaGetFuncBySymbol) and checks its resources as for a kernel compiled at run time. The
/// devices, launches, streams and isolation workers are the runtime's GPU backend's
/// (gpu/rtc_backend.hpp), over the same API table, which adds for compiled kernels:
///
///     using compiled_function = ...;                    // what Runtime::lookup gives (CUfunction)
///     static function from_lookup(void* found);         // the kernel_calls function of it
///     static std::optional<worker_image> compiled_image(const context&, function, const void* host_address,
///                                                       std::string& why);  // for an isolation worker
///
/// What the tuner sees: binaries are never cached (`caches_binaries = false`), and the fingerprint
/// names the program's build (gpu/program_module.hpp), so that a tuning result of one build is never
/// the winner of another: "cuda-compiled;build-id:1f63...;driver 13.0;sm_90".
///
/// Isolation (COTUNE_ISOLATE): the worker is the same program, but it runs before the program's
/// static initialisers, which register the build's kernels with the runtime, so it cannot look the
/// function up by address. It gets what a run-time compiled candidate sends instead: the device
/// image that holds the kernel (the `.cu` file's fat binary, read from the program's memory) and the
/// kernel's symbol. Where the image cannot be found, the candidate is measured in-process, with a
/// warning saying why.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/gpu/compiled_kernels.hpp>
#include <cotune/gpu/isolation.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/gpu/program_module.hpp>
#include <cotune/gpu/rtc_backend.hpp>

namespace cotune::gpu {

/// What an isolation worker loads for a compiled kernel: an image and the kernel's symbol in it.
struct worker_image {
  std::string image;
  std::string symbol;
};

namespace detail {

/// The config of a compiled candidate; the parameter `threads_param` (if any) is also its block's
/// thread count.
[[nodiscard]] COTUNE_DECL config config_of(const compiled_entry& e, const std::string& threads_param);

/// A kernel argument of type `A` fits kernel parameter `P` when the kernel receives as many bytes as
/// the parameter has (`cotune::kernel_arg`: a device span passes its address).
template <class A, class P>
inline constexpr bool argument_fits =
    sizeof(std::remove_cvref_t<decltype(cotune::kernel_arg(std::declval<A&>()))>) == sizeof(P);

} // namespace detail

/// Tunes among `__global__` functions of signature `Signature` that the program's build compiled
/// (see the file's comment); satisfies `cotune::Backend`. Copies share the candidates.
template <class Api, class Signature>
class compiled_backend;

template <class Api, class... Params>
class compiled_backend<Api, void(Params...)> : private rtc_backend<Api> {
  using base = rtc_backend<Api>;
  using calls = typename Api::kernel_calls;

public:
  using device = typename base::device;
  using default_benchmarker_type = typename base::default_benchmarker_type;
  using function = typename base::function;
  using stream_type = typename base::stream_type;
  /// Candidates can be measured in the runtime's isolation worker (COTUNE_ISOLATE).
  static constexpr bool worker_isolation = true;
  /// Nothing to cache: the program holds every candidate.
  static constexpr bool caches_binaries = false;

  /// A candidate: its index among the compiled kernels.
  struct binary {
    std::size_t index = 0;
  };

  /// The candidates of `kernels` (copied).
  template <class Runtime>
  explicit compiled_backend(const compiled_kernels<void(Params...), Runtime>& kernels)
      : table_(std::make_shared<table>(kernels.entries(), kernels.threads_param())) {}

  /// A kernel source naming the candidates (what the tuning-result key hashes with the build):
  /// `name` for messages and cache files.
  [[nodiscard]] kernel_source source(std::string name) const {
    std::string listing;
    for (const auto& c : table_->configs) listing += c.text() + "\n";
    return {std::move(name), std::move(listing), "compiled", {}, {}};
  }
  /// The candidates' configs, in the order they were added (the autotuner's candidate list).
  [[nodiscard]] const std::vector<config>& configs() const noexcept { return table_->configs; }

  using base::device_key;
  using base::device_name;
  using base::devices;
  using base::interchangeable;
  using base::is_capturing;
  using base::launch_raw;
  using base::launch_raw_on;
  using base::prestart_isolation;
  using base::stream;
  using base::synchronize;
  using base::synchronize_stream;

  /// "cuda-compiled;build-id:1f63...;driver 13.0;sm_90": the program's build (every module that holds
  /// a candidate), the runtime's version and the architecture. Never loads the run-time compiler.
  [[nodiscard]] std::string fingerprint(const device& d) const {
    const auto* lib = Api::try_library();
    return fmt::format("{}-compiled;{};{} {};{}", Api::names.key, table_->build(), Api::names.library_key,
                       lib ? lib->version_text() : std::string("none"), d.arch());
  }

  /// Names the candidate (never stored: `caches_binaries` is false).
  [[nodiscard]] binary_recipe binary_key(const kernel_source& k, const config& c, const device& d) const {
    return {fmt::format("{}-compiled", Api::names.key), {table_->build(), c.text(), d.arch()}, k.name + ".compiled", false};
  }

  /// Finds `c` among the compiled candidates; compile_error when the build has no kernel for it.
  [[nodiscard]] binary compile(const kernel_source& k, const config& c, const device&) const {
    for (std::size_t i = 0; i < table_->configs.size(); ++i)
      if (table_->configs[i] == c) return {i};
    throw compile_error(fmt::format("{}: kernel '{}' has no compiled candidate with config {{{}}}: the build compiled "
                                    "{} configs (add it to the compiled_kernels, or tune only their configs)",
                                    Api::names.backend, k.name, c.text(), table_->configs.size()),
                        "");
  }

  [[nodiscard]] binary_image to_image(const binary& bin) const { return {std::to_string(bin.index), {}, {}}; }
  [[nodiscard]] std::optional<binary> from_image(binary_image img) const {
    std::size_t index = 0;
    try {
      index = std::stoul(img.bytes);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (index >= table_->configs.size()) return std::nullopt;
    return binary{index};
  }

  /// Finds the candidate's device function on `d` (its primary context) and checks its resources
  /// before any launch. Throws out_of_resources naming the resource, launch_error otherwise.
  [[nodiscard]] function load(const binary& bin, const kernel_source& k, const config& c, const device& d) const {
    const auto& ctx = this->context_for(k, d);
    ctx.make_current();
    const compiled_entry& e = table_->entries.at(bin.index);
    void* found = nullptr;
    if (const int r = e.lookup(&found, e.host_address); r != 0 || !found)
      throw launch_error(fmt::format("{}: loading kernel '{}' with config {{{}}} on {}: {} failed with error {}",
                                     Api::names.backend, k.name, c.text(), this->device_name(d), Api::lookup_call, r));
    return bind_kernel<calls>(ctx, {}, Api::from_lookup(found), k, c, this->kernel_device_of(d));
  }

  /// Launches `f` on `grid` on the device's stream (as the runtime's GPU backend does).
  template <class... Args>
  void launch(const function& f, const launch_grid& grid, Args&... args) const {
    check_signature<Args...>();
    base::launch(f, grid, args...);
  }

  /// `launch` on the caller's `stream`: in order with the caller's work, capturable into a graph.
  template <class... Args>
  void launch_on(stream_type stream, const function& f, const launch_grid& grid, Args&... args) const {
    check_signature<Args...>();
    base::launch_on(stream, f, grid, args...);
  }

  /// Runs candidate `bin` (loaded as `f`) in `f`'s device's isolation worker, which loads the device
  /// image that holds it (see the file's comment); `refused`, with a warning once, when that image
  /// cannot be found: the caller measures in-process then.
  template <class... Args>
  [[nodiscard]] cotune::detail::isolated_result run_in_worker(const binary& bin, const function& f,
                                                              const launch_grid& grid,
                                                              const cotune::detail::worker_task& task,
                                                              const bench_options& o, Args&... args) const {
    check_signature<Args...>();
    Api::template check_arguments<Args...>();
    this->check_devices(f, args...);
    std::string why;
    auto image = table_->image(bin.index, *f.context, f.handle, why);
    if (!image) {
      cotune::detail::isolated_result out;
      out.end = cotune::detail::isolated_result::ending::refused;
      out.detail = fmt::format("COTUNE_ISOLATE: kernel '{}' is measured in-process, not in an isolation worker: {}",
                               f.module->kernel_name, why);
      detail::isolation_pool::of<Api::worker_kind>().warn_once(out.detail);
      return out;
    }
    return detail::run_in_worker<Api::worker_kind, typename Api::sharing>(f, image->image, image->symbol, grid, task, o,
                                                                          Api::knobs().flush_factor.get(),
                                                                          Api::knobs().graph.get(), args...);
  }

  /// Warnings about isolation workers since the last call (there is no compiler to warn about).
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    return detail::isolation_pool::of<Api::worker_kind>().take_warnings();
  }

private:
  template <class... Args>
  static constexpr void check_signature() {
    static_assert(sizeof...(Args) == sizeof...(Params),
                  "the tuner's signature and the compiled kernels' have different numbers of parameters");
    if constexpr (sizeof...(Args) == sizeof...(Params))
      static_assert((detail::argument_fits<Args, Params> && ...),
                    "a tuner argument does not fit the compiled kernels' parameter in its place: the kernel receives "
                    "cotune::kernel_arg(argument) (a device span passes its address), which must have the "
                    "parameter's size");
  }

  /// The candidates, shared by copies, with what is learnt about them once.
  struct table {
    table(std::vector<compiled_entry> e, const std::string& threads_param) : entries(std::move(e)) {
      configs.reserve(entries.size());
      for (const auto& entry : entries) configs.push_back(detail::config_of(entry, threads_param));
    }
    std::vector<compiled_entry> entries;
    std::vector<config> configs;

    /// The build of every module that holds a candidate, read once.
    [[nodiscard]] const std::string& build() const {
      std::call_once(build_once, [&] {
        std::vector<std::string> builds;
        for (const auto& e : entries) {
          const std::string& b = program_module_of(e.host_address).build;
          if (std::find(builds.begin(), builds.end(), b) == builds.end()) builds.push_back(b);
        }
        for (const auto& b : builds) build_text += (build_text.empty() ? "" : "+") + b;
      });
      return build_text;
    }

    /// The image and symbol an isolation worker loads for candidate `index`, found once.
    [[nodiscard]] std::optional<worker_image> image(std::size_t index, const typename Api::context& ctx,
                                                    typename calls::function f, std::string& why) const {
      std::lock_guard lock(images_mutex);
      auto it = images.find(index);
      if (it == images.end()) {
        std::string reason;
        auto found = Api::compiled_image(ctx, f, entries.at(index).host_address, reason);
        it = images.emplace(index, std::make_pair(std::move(found), std::move(reason))).first;
      }
      why = it->second.second;
      return it->second.first;
    }

    mutable std::once_flag build_once;
    mutable std::string build_text;
    mutable std::mutex images_mutex;
    mutable std::map<std::size_t, std::pair<std::optional<worker_image>, std::string>> images; ///< and why not
  };

  std::shared_ptr<const table> table_;
};

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/compiled_backend.ipp>
#endif
