#pragma once
/// \file `cotune::tune_options<Args...>`: how an autotuner over a kernel `void(Args...)` tunes (the
/// parameters of Triton's `autotune` decorator, plus what C++ needs). `autotuner<void(Args...)>::options`
/// is this type.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/param_kind.hpp>
#include <cotune/core/value.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/search/search_strategy.hpp>
#include <cotune/tune/measure_strategy.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune {

/// How to tune a kernel `void(Args...)`. Every member has a default except `arg_names`.
template <class... Args>
struct tune_options {
  /// Names of the kernel's arguments, in order (one per argument).
  std::vector<std::string> arg_names;
  /// Arguments whose values select a tuning (scalars by value, buffers by element type and extent).
  /// Every buffer argument also adds its element type, as in Triton.
  std::vector<std::string> key{};
  /// Gets every candidate and the call's arguments; returns the ones worth measuring.
  std::function<std::vector<config>(const std::vector<config>&, const Args&...)> early_config_prune{};
  /// Predicted time of a config (lower is better); with top_k, keeps only the top_k best predicted.
  std::function<double(const config&, const Args&...)> perf_model{};
  /// An integer count, or a fraction in (0, 1] of the early-pruned list (never rounded to 0).
  std::variant<std::int64_t, double> top_k = 1.0;
  /// Buffer arguments zeroed before every benchmark run and before the real launch after tuning.
  std::vector<std::string> reset_to_zero{};
  /// Buffer arguments saved before every benchmark run and restored after it.
  std::vector<std::string> restore_value{};
  /// Called before every benchmark run (after the built-in reset/restore handling; unlike Triton,
  /// a user hook does not switch the built-in handling off).
  std::function<void(Args&...)> pre_hook{};
  /// Called after every benchmark run, with the exception of a failed run (or null).
  std::function<void(std::exception_ptr, Args&...)> post_hook{};
  /// Values computed from the arguments, added to every config as parameters (and to the tuning key).
  std::vector<std::pair<std::string, std::function<value(const Args&...)>>> heuristics{};
  /// Sets up each loaded binary before it first runs: called once per load of a candidate on a device
  /// (on every device it is measured on, and for the winner after a result-cache hit), with the module
  /// and the arguments valid on that device. Writes `__constant__` data through
  /// `m.global<T>("name").copy_from(...)`. It runs at load time only, never on the tuned call's path;
  /// data that differs between calls of one key belongs in kernel arguments. An exception fails that
  /// candidate (or, for the winner, the call). Only backends that find module globals
  /// (cotune::FindsModuleGlobals: CUDA, HIP, host) take it; any other refuses it at construction.
  std::function<void(const module_view&, const Args&...)> on_load{};
  /// Launch geometry of a config for given arguments (GPU backends).
  std::function<launch_grid(const config&, const Args&...)> grid{};
  /// Store results in the tuning-result cache; unset: the `autotuning.cache` knob decides.
  std::optional<bool> cache_results{};
  /// Benchmark budgets; unset: the `bench.*` knobs.
  std::optional<bench_options> bench{};
  /// Receivers of tuning events (besides the printer that COTUNE_PRINT_AUTOTUNING installs).
  std::vector<std::shared_ptr<observer>> observers{};
  /// Index (into backend.devices()) of the device the winner launches on.
  std::size_t device = 0;
  /// For backends with several identical devices: arguments valid on device `d` (its own buffers),
  /// so that the candidate list is split across devices. Unset: benchmark on `device` only.
  std::function<std::tuple<Args...>(std::size_t d, const Args&...)> args_for_device{};
  /// How candidates are measured; unset: screening as the bench.screen_* knobs say.
  std::shared_ptr<const measure_strategy> measure{};
  /// Which candidates are evaluated (search/search.hpp); unset: the one COTUNE_SEARCH names
  /// (exhaustive by default: every candidate).
  std::shared_ptr<const search_strategy> search{};
  /// The search's evaluation and wall-clock budgets and seed; a field left at 0 (and the whole,
  /// when unset) comes from COTUNE_SEARCH_BUDGET, COTUNE_SEARCH_TIME_MS and COTUNE_SEARCH_SEED.
  std::optional<search_settings> search_budget{};
  /// Parameters' kinds for the search (`config_space::kinds()`, e.g. a numeric algorithm selector
  /// declared categorical); a name left out: strings and booleans categorical, numbers ordered.
  param_kinds kinds{};
  /// Checks a candidate's outputs after one run, before it is timed: nothing if they are right,
  /// else why not (e.g. `compare_outputs`' first differing element). A rejected candidate is
  /// recorded as `wrong_result` and never wins. Buffers named in restore_value are already restored
  /// when it runs (check in-place kernels' outputs with a post_hook instead). Unset: no check.
  /// Before that run the outputs are poisoned (see poison_outputs).
  std::function<std::optional<std::string>(const config&, const Args&...)> verify{};
  /// With verify: before each candidate's verification run, every writable buffer that
  /// reset_to_zero and restore_value do not name is filled with bytes 0xFF (NaN in every floating-point
  /// type, -1 in signed integers; host spans and device spans), so that a candidate that writes
  /// nothing fails instead of passing on the previous candidate's outputs. Pass inputs as views of
  /// const elements (or name in-place buffers in restore_value), or set this to false.
  bool poison_outputs = true;
};

} // namespace cotune
