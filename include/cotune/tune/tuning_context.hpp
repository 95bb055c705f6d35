#pragma once
/// \file `cotune::tuning_context`: what every tuning of one autotuner shares (the kernel and its
/// candidates, the options, the backend and its devices, one benchmarker per device, the counters),
/// and the steps that need nothing else: pruning, compiling one candidate, the result cache's key,
/// reporting events. The autotuner owns one; each `tuning_job` works through it.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include <cotune/backend/backend.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/backend_traits.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/kernel_arguments.hpp>
#include <cotune/tune/module_setup.hpp>
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

namespace detail {

/// Records a failure: the exception's type gives the status.
inline void record_failure(candidate_result& r, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const candidate_crashed& x) {
    r.status = candidate_status::crashed;
    r.reason = x.what();
  } catch (const candidate_hung& x) {
    r.status = candidate_status::hung;
    r.reason = x.what();
  } catch (const compiler_crashed& x) {
    r.status = candidate_status::compiler_crashed;
    r.reason = x.what();
  } catch (const compile_error& x) {
    r.status = candidate_status::compile_error;
    r.reason = x.what();
  } catch (const out_of_resources& x) {
    r.status = candidate_status::out_of_resources;
    r.reason = x.what();
  } catch (const wrong_result& x) {
    r.status = candidate_status::wrong_result;
    r.reason = x.what();
  } catch (const timeout_error& x) {
    r.status = candidate_status::timeout;
    r.reason = x.what();
  } catch (const launch_error& x) {
    r.status = candidate_status::launch_error;
    r.reason = x.what();
  } catch (const std::exception& x) {
    r.status = candidate_status::error;
    r.reason = x.what();
  } catch (...) {
    r.status = candidate_status::error;
    r.reason = "unknown exception";
  }
  r.time = {inf_ms, inf_ms, inf_ms};
}

} // namespace detail

template <Backend B, class Bench, CacheManager Cache, class... Args>
class tuning_context {
public:
  using options = tune_options<Args...>;
  using device_type = typename B::device;
  using function_type = typename B::function;
  using binary_type = typename B::binary;

  tuning_context(kernel_source k, std::vector<config> candidates, options o, B b, engine& engine_ref)
      : kernel(std::move(k)), configs(std::move(candidates)), opts(std::move(o)), arguments(kernel.name, opts),
        backend(std::move(b)), eng(engine_ref), binaries(backend) {
    if (configs.empty()) configs.push_back(config{}); // Triton's single default config
    devices = backend.devices();
    if (devices.empty())
      throw autotuner_error(fmt::format("autotuner for '{}': the backend has no device to run on", kernel.name));
    if (opts.device >= devices.size())
      throw autotuner_error(fmt::format("autotuner for '{}': device {} requested, but the backend has {}", kernel.name,
                                        opts.device, devices.size()));
    for (std::size_t d = 0; d < devices.size(); ++d) device_ids.push_back(device_key(d));
    detail::check_on_load<B>(opts.on_load, kernel.name);
  }
  tuning_context(const tuning_context&) = delete; // `arguments` points into `opts`
  tuning_context& operator=(const tuning_context&) = delete;

  /// Reports an event to the options' observers and the printer the knobs choose (warnings always).
  void emit(const tuning_event& e) const {
    for (const auto& o : opts.observers) o->notify(e);
    static printing_observer printer(stderr, true, true);
    static printing_observer progress(stderr, false, true);
    static printing_observer warnings_only(stderr, false, false);
    if (knobs().autotuning.print.get()) printer.notify(e);
    else if (knobs().autotuning.progress.get()) progress.notify(e);
    else warnings_only.notify(e);
  }

  /// The binary of candidate `c` for device `d`: from the binary cache, or compiled now and stored.
  /// Thread-safe (runs on the compile pool).
  [[nodiscard]] cached_binary<binary_type> compile(const config& c, const device_type& d, std::stop_token stop) const {
    ++compiles;
    return binaries.get_or_compile(kernel, c, d, stop);
  }

  /// Loads candidate `c`'s binary on device `d` and runs on_load on the new module (with `args`, valid
  /// on `d`) before anything launches it. On the device's thread. Every load of a tuning comes here.
  [[nodiscard]] function_type load(const cached_binary<binary_type>& bin, const config& c, std::size_t d,
                                   const std::tuple<Args...>& args) const {
    function_type fn = binaries.load(bin, kernel, c, devices[d]);
    if (opts.on_load) detail::run_on_load(backend, fn, opts.on_load, kernel, c, devices[d], d, args);
    return fn;
  }

  /// On device `d`'s thread, before interleaved finals there: loads each finalist not loaded there yet
  /// (measured on another device in the first pass), so that on_load runs on it first; one that fails
  /// to load or set up is recorded as failed and left out. `state` is the tuning job's. Returns the rest.
  template <class State>
  [[nodiscard]] std::vector<std::size_t> load_finalists(State& state, const std::vector<std::size_t>& finalists,
                                                        std::size_t d, const std::tuple<Args...>& args) const {
    std::vector<std::size_t> kept;
    for (auto i : finalists) {
      try {
        if (!state.loaded[i]) state.loaded[i].emplace(load(*state.binaries[i], state.results[i].cfg, d, args));
        kept.push_back(i);
      } catch (...) {
        detail::record_failure(state.results[i], std::current_exception());
      }
    }
    return kept;
  }

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

  /// The candidates worth measuring for these arguments: early_config_prune, then perf_model's
  /// top_k, then the heuristics' values added to each.
  [[nodiscard]] std::vector<config> prune(const Args&... args) const {
    std::vector<config> pruned = configs;
    if (opts.early_config_prune) {
      pruned = opts.early_config_prune(configs, args...);
      if (pruned.empty())
        throw autotuner_error(fmt::format("autotuner for '{}': no configs left after early_config_prune (key {}); "
                                          "it must return at least one config",
                                          kernel.name, arguments.key_text(args...)));
    }
    if (opts.perf_model) {
      const std::size_t k = top_k(pruned.size());
      if (pruned.size() > k) {
        std::vector<std::pair<double, std::size_t>> scored;
        for (std::size_t i = 0; i < pruned.size(); ++i) scored.emplace_back(opts.perf_model(pruned[i], args...), i);
        std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
        std::vector<config> kept;
        for (std::size_t i = 0; i < k; ++i) kept.push_back(pruned[scored[i].second]);
        pruned = std::move(kept);
      }
    }
    for (const auto& [name, fn] : opts.heuristics) {
      value v = fn(args...);
      for (auto& c : pruned) {
        if (c.contains(name))
          throw autotuner_error(fmt::format("autotuner for '{}': conflicting meta-parameters: heuristic '{}' is also "
                                            "a parameter of config {{{}}}; don't re-define auto-tuned symbols",
                                            kernel.name, name, c.text()));
        c.set(name, v);
      }
    }
    return pruned;
  }

  [[nodiscard]] bool cache_results() const { return opts.cache_results.value_or(knobs().autotuning.cache.get()); }

  /// SHA-256 over cotune's version, the backend's fingerprint, the kernel (source and compile options),
  /// the set cache-invalidating knobs, the tuning key and the candidate list.
  [[nodiscard]] std::string result_key(const std::string& key_text, const std::vector<config>& pruned) const {
    detail::sha256_hasher h;
    h.field("cotune-tuning-result").field(version).field(std::to_string(cache_format_version));
    h.field(backend.fingerprint(devices[opts.device])).field(kernel.digest());
    h.field(knob_registry::instance().invalidating_text()).field(key_text);
    h.field(std::to_string(pruned.size()));
    for (const auto& c : pruned) h.field(c.text());
    // A budgeted search's winner is the best of what it measured: another strategy, budget or seed
    // must not reuse it. An exhaustive search keeps the keys it always had.
    const auto s = search();
    const auto st = search_budget();
    if (!s->evaluates_all() || st.evaluations || st.wall_ms > 0)
      h.field(fmt::format("search {} {} {} {}", s->name(), st.evaluations, st.wall_ms, st.seed));
    return detail::to_hex(h.digest());
  }

  /// The search strategy: the options', else the one COTUNE_SEARCH names.
  [[nodiscard]] std::shared_ptr<const search_strategy> search() const {
    return opts.search ? opts.search : search_from_knobs();
  }
  /// The search's budgets and seed: the options', completed by the knobs.
  [[nodiscard]] search_settings search_budget() const { return search_settings_from_knobs(opts.search_budget); }
  [[nodiscard]] std::string result_file() const { return kernel.name + ".autotune.json"; }

  /// The benchmark budgets: the options' if set, else the `bench.*` knobs; quantiles 0.5, 0.2, 0.8.
  [[nodiscard]] bench_options bench_settings() const {
    bench_options o = opts.bench.value_or(bench_options{knobs().bench.warmup_ms.get(), knobs().bench.rep_ms.get()});
    o.quantiles = {0.5, 0.2, 0.8};
    return o;
  }

  kernel_source kernel;
  std::vector<config> configs;
  options opts;
  kernel_arguments<Args...> arguments;
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

  [[nodiscard]] std::size_t top_k(std::size_t count) const {
    if (auto* n = std::get_if<std::int64_t>(&opts.top_k)) {
      if (*n < 1) throw autotuner_error(fmt::format("autotuner for '{}': top_k must be at least 1 (got {})", kernel.name, *n));
      return static_cast<std::size_t>(*n);
    }
    const double f = std::get<double>(opts.top_k);
    if (!(f > 0.0 && f <= 1.0))
      throw autotuner_error(fmt::format("autotuner for '{}': a fractional top_k must be in (0, 1] (got {})", kernel.name, f));
    // Of the early-pruned list (Triton counts the unpruned list), and never 0.
    return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(count) * f));
  }

  std::mutex bench_mutex_;
  std::unordered_map<std::size_t, std::unique_ptr<Bench>> benches_;
};

} // namespace cotune
