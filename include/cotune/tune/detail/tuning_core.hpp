#pragma once
/// \file `cotune::tuning_core`: a tuner's shared state that does not depend on its kernel's argument
/// types (the kernel and its candidates, the backend and its devices, one benchmarker per device, the
/// counters, and the options a tuning reads whatever the arguments). The autotuner owns one beside its
/// options and `kernel_arguments`; the tuning job's coroutines work through this core and a
/// `kernel_call` alone, so they are compiled once per backend, benchmarker and cache, not once per
/// kernel signature (a file with ten tuners of one backend compiles them once).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/run_on.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/detail/backend_traits.hpp>
#include <cotune/tune/detail/block_on.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/measure_strategy.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune {

namespace detail {

/// Hands `e` to every observer of `observers`, then to the printer the knobs ask for
/// (autotuning.print, autotuning.progress; warnings always).
COTUNE_DECL void emit_event(const std::vector<std::shared_ptr<observer>>& observers, const tuning_event& e);

/// The result cache's key of one tuning (see tuning_core::result_key).
[[nodiscard]] COTUNE_DECL std::string result_key(const std::string& fingerprint, const std::string& kernel_digest,
                                                 const std::string& key_text, const std::vector<config>& pruned,
                                                 const search_strategy& search, const search_settings& budget);

} // namespace detail

/// The options of `tune_options<Args...>` that do not depend on the arguments' types, copied from
/// them once, when the tuner is made (a tuner's options never change afterwards).
struct tuning_settings {
  std::size_t device = 0;
  std::optional<bool> cache_results;
  std::optional<bench_options> bench;
  std::vector<std::shared_ptr<observer>> observers;
  std::shared_ptr<const measure_strategy> measure;
  std::shared_ptr<const search_strategy> search;
  std::optional<search_settings> search_budget;
  std::vector<module_constant> constants; ///< written into every loaded module (tune_options::constants)
  bool per_device_arguments = false;      ///< args_for_device is set
  /// Which of the options' hooks are set (host code that only this process can run: isolation_applies).
  bool pre_hook = false, post_hook = false, on_load = false;
  param_kinds kinds = {}; ///< the options' declared parameter kinds (tune_options::kinds)

  /// The settings of a tuner's options.
  template <class Options>
  [[nodiscard]] static tuning_settings of(const Options& o) {
    return {o.device,    o.cache_results,
            o.bench,     o.observers,
            o.measure,   o.search,
            o.search_budget, o.constants,
            static_cast<bool>(o.args_for_device), static_cast<bool>(o.pre_hook),
            static_cast<bool>(o.post_hook), static_cast<bool>(o.on_load),
            o.kinds};
  }
};

/// What every tuning of one autotuner shares, whatever its kernel's arguments.
template <Backend B, class Bench, CacheManager Cache>
class tuning_core {
public:
  using device_type = typename B::device;
  using function_type = typename B::function;
  using binary_type = typename B::binary;

  tuning_core(kernel_source k, std::vector<config> candidates, tuning_settings s, B b, engine& engine_ref);
  tuning_core(const tuning_core&) = delete;
  tuning_core& operator=(const tuning_core&) = delete;

  /// Reports an event to the options' observers and the printer the knobs choose (warnings always).
  void emit(const tuning_event& e) const { detail::emit_event(settings.observers, e); }

  /// The binary of candidate `c` for device `d`: from the binary cache, or compiled now and stored.
  /// Thread-safe (runs on the compile pool).
  [[nodiscard]] cached_binary<binary_type> compile(const config& c, const device_type& d, std::stop_token stop) const;

  /// Loads candidate `c`'s binary on device `d` and writes the options' constants into it (before
  /// on_load, which the caller runs). On the device's thread.
  [[nodiscard]] function_type load_module(const cached_binary<binary_type>& bin, const config& c, std::size_t d) const;

  /// Runs `load` (a load of a module, load_module and its hooks) on device `d`'s thread and returns
  /// what it loaded; the caller blocks until then (never call it from the engine's own threads). A
  /// `std::function`, so that this coroutine is compiled once per backend, not once per signature.
  [[nodiscard]] function_type load_on_device(std::size_t d, const std::function<function_type()>& load);

  /// Times each of `runs` in rounds on device `d`'s benchmarker (measure_rounds), going on from
  /// `progress` as `plan` says. On the device's thread.
  void measure_rounds(std::size_t d, const std::vector<std::function<void()>>& runs, const bench_options& full,
                      finals_progress& progress, const rounds_plan& plan);

  /// The benchmarker of device `d`, made on first use.
  Bench& benchmarker(std::size_t d) {
    std::lock_guard lock(bench_mutex_);
    auto& b = benches_[d];
    if (!b) b = detail::make_benchmarker<Bench>(backend, devices[d]);
    return *b;
  }

  /// Devices whose timings are comparable (same model, not only the same architecture): the
  /// backend's `interchangeable` if it has one, else equal fingerprints.
  [[nodiscard]] bool interchangeable(const device_type& a, const device_type& b) const {
    if constexpr (ComparesDevices<B>) return backend.interchangeable(a, b);
    else return backend.fingerprint(a) == backend.fingerprint(b);
  }

  [[nodiscard]] bool cache_results() const { return settings.cache_results.value_or(knobs().autotuning.cache.get()); }

  /// SHA-256 over cotune's version, the backend's fingerprint, the kernel (source and compile options),
  /// the set cache-invalidating knobs, the tuning key and the candidate list.
  [[nodiscard]] std::string result_key(const std::string& key_text, const std::vector<config>& pruned) const {
    return detail::result_key(backend.fingerprint(devices[settings.device]), kernel.digest(), key_text, pruned,
                              *search(), search_budget());
  }

  /// The search strategy: the options', else the one COTUNE_SEARCH names (unset: by the budget).
  [[nodiscard]] std::shared_ptr<const search_strategy> search() const {
    return settings.search ? settings.search : search_from_knobs(search_budget());
  }
  /// The search's budgets and seed: the options', completed by the knobs.
  [[nodiscard]] search_settings search_budget() const { return search_settings_from_knobs(settings.search_budget); }
  [[nodiscard]] std::string result_file() const { return kernel.name + ".autotune.json"; }

  /// The benchmark budgets: the options' if set, else the `bench.*` knobs; quantiles 0.5, 0.2, 0.8.
  [[nodiscard]] bench_options bench_settings() const {
    bench_options o = settings.bench.value_or(bench_options{knobs().bench.warmup_ms.get(), knobs().bench.rep_ms.get()});
    o.quantiles = {0.5, 0.2, 0.8};
    return o;
  }

  kernel_source kernel;
  std::vector<config> configs;
  const tuning_settings settings;
  B backend;
  engine& eng;
  binary_cache<B, Cache> binaries;
  std::vector<device_type> devices;
  std::vector<std::string> device_ids; ///< the key of each device's thread in the engine
  mutable std::atomic<std::size_t> measured{0}, cached{0}, compiles{0};

private:
  /// The key of device `d`'s thread: the physical device the backend names (so that every tuner on
  /// it shares one thread, whatever its template arguments), else its name and index.
  [[nodiscard]] std::string device_key(std::size_t d) const {
    if constexpr (HasDeviceKey<B>) return backend.device_key(devices[d]);
    else return fmt::format("{}#{}", backend.device_name(devices[d]), d);
  }

  std::mutex bench_mutex_;
  std::unordered_map<std::size_t, std::unique_ptr<Bench>> benches_;
};

template <Backend B, class Bench, CacheManager Cache>
tuning_core<B, Bench, Cache>::tuning_core(kernel_source k, std::vector<config> candidates, tuning_settings s, B b,
                                          engine& engine_ref)
    : kernel(std::move(k)), configs(std::move(candidates)), settings(std::move(s)), backend(std::move(b)),
      eng(engine_ref), binaries(backend) {
  // Triton's single default config, made in place (g++ 13 -O2 -Werror took the moved-from temporary's
  // hook name for maybe uninitialised)
  if (configs.empty()) configs.emplace_back();
  devices = backend.devices();
  if (devices.empty())
    throw autotuner_error(fmt::format("autotuner for '{}': the backend has no device to run on", kernel.name));
  if (settings.device >= devices.size())
    throw autotuner_error(fmt::format("autotuner for '{}': device {} requested, but the backend has {}", kernel.name,
                                      settings.device, devices.size()));
  for (std::size_t d = 0; d < devices.size(); ++d) device_ids.push_back(device_key(d));
  if constexpr (!FindsModuleGlobals<B>)
    if (!settings.constants.empty())
      throw autotuner_error(fmt::format(
          "autotuner for '{}': tune_options::constants is set ('{}'), but this backend cannot find a loaded module's "
          "globals (it does not satisfy cotune::FindsModuleGlobals: the CUDA, HIP and host backends do), so the data "
          "could never be written; pass it as a kernel argument instead, or use a backend with module globals",
          kernel.name, settings.constants.front().name));
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_core<B, Bench, Cache>::compile(const config& c, const device_type& d, std::stop_token stop) const
    -> cached_binary<binary_type> {
  ++compiles;
  return binaries.get_or_compile(kernel, c, d, stop);
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_core<B, Bench, Cache>::load_module(const cached_binary<binary_type>& bin, const config& c,
                                              std::size_t d) const -> function_type {
  function_type fn = binaries.load(bin, kernel, c, devices[d]);
  if constexpr (FindsModuleGlobals<B>)
    if (!settings.constants.empty()) {
      const module_view m(c, kernel.name, backend.device_name(devices[d]), d,
                          [&](std::string_view name) { return backend.find_global(fn, name); });
      for (const auto& k : settings.constants) {
        try {
          k.write_to(m);
        } catch (const launch_error&) {
          throw;
        } catch (const std::exception& e) {
          throw error(fmt::format("tune_options::constants for kernel '{}' with config {{{}}} on {}: {}", kernel.name,
                                  c.text(), m.device_name(), e.what()));
        }
      }
    }
  return fn;
}

template <Backend B, class Bench, CacheManager Cache>
void tuning_core<B, Bench, Cache>::measure_rounds(std::size_t d, const std::vector<std::function<void()>>& runs,
                                                  const bench_options& full, finals_progress& progress,
                                                  const rounds_plan& plan) {
  cotune::measure_rounds(benchmarker(d), runs, full, progress, plan);
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_core<B, Bench, Cache>::load_on_device(std::size_t d, const std::function<function_type()>& load)
    -> function_type {
  auto loading = detail::run_on(eng.device_executor(device_ids[d]), [&] { return load(); }); // named: run_on.hpp
  return detail::block_on(eng.coordinator(), std::move(loading));
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/tuning_core.ipp>
#endif
