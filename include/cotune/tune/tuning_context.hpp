#pragma once
/// \file `cotune::tuning_context`: what every tuning of one autotuner shares: its `tuning_core`
/// (the kernel, the backend and its devices, the benchmarkers, the counters, the steps that need
/// nothing else) and the side that depends on the kernel's arguments: the options, the arguments'
/// roles, pruning and loading with on_load. The autotuner owns one; each tuning job works through it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/value.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/kernel_arguments.hpp>
#include <cotune/tune/module_setup.hpp>
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/tuning_core.hpp>

namespace cotune {

/// A tuner's shared state for a kernel `void(Args...)`: its core and its arguments' side.
template <Backend B, class Bench, CacheManager Cache, class... Args>
class tuning_context : public tuning_core<B, Bench, Cache> {
public:
  using core = tuning_core<B, Bench, Cache>;
  using options = tune_options<Args...>;
  using typename core::binary_type;
  using typename core::device_type;
  using typename core::function_type;
  using core::backend;
  using core::binaries;
  using core::configs;
  using core::devices;
  using core::kernel;

  tuning_context(kernel_source k, std::vector<config> candidates, options o, B b, engine& engine_ref)
      : core(std::move(k), std::move(candidates), tuning_settings::of(o), std::move(b), engine_ref),
        opts(std::move(o)), arguments(kernel.name, opts) {
    detail::check_on_load<B>(opts.on_load, kernel.name);
  }
  tuning_context(const tuning_context&) = delete; // `arguments` points into `opts`
  tuning_context& operator=(const tuning_context&) = delete;

  /// Loads candidate `c`'s binary on device `d` and runs on_load on the new module (with `args`, valid
  /// on `d`) before anything launches it. On the device's thread. Every load of a tuning comes here.
  [[nodiscard]] function_type load(const cached_binary<binary_type>& bin, const config& c, std::size_t d,
                                   const std::tuple<Args...>& args) const {
    function_type fn = binaries.load(bin, kernel, c, devices[d]);
    if (opts.on_load) detail::run_on_load(backend, fn, opts.on_load, kernel, c, devices[d], d, args);
    return fn;
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

  const options opts;
  kernel_arguments<Args...> arguments;

private:
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
};

} // namespace cotune
