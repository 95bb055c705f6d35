#pragma once
/// \file `cotune::tune_options<Args...>`: how an autotuner over a kernel `void(Args...)` tunes (the
/// parameters of Triton's `autotune` decorator, plus what C++ needs). `autotuner<void(Args...)>::options`
/// is this type.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
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
#include <cotune/tune/hook.hpp>
#include <cotune/tune/measure_strategy.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune {

/// What a call for a key not tuned yet does (tune_options::first_call, COTUNE_FIRST_CALL).
enum class first_call_mode {
  wait, ///< tune the key, then launch its winner (the default)
  serve ///< launch a stand-in at once and tune the key in the background (docs/serving.md)
};

/// How to tune a kernel `void(Args...)`. Every member has a default except `arg_names`. Each callable
/// (a `cotune::hook`) takes its arguments as listed, a generic lambda (`[](const cotune::config& c,
/// const auto&... args)`), or a lambda taking only the leading arguments it names.
template <class... Args>
struct tune_options {
  /// Names of the kernel's arguments, in order (one per argument).
  std::vector<std::string> arg_names;
  /// Arguments whose values select a tuning (scalars by value, buffers by element type and extent).
  /// Every buffer argument also adds its element type, as in Triton.
  std::vector<std::string> key{};
  /// Gets every candidate and the call's arguments; returns the ones worth measuring.
  hook<std::vector<config>(const std::vector<config>&, const Args&...)> early_config_prune{};
  /// Predicted time of a config (lower is better); with top_k, keeps only the top_k best predicted.
  hook<double(const config&, const Args&...)> perf_model{};
  /// An integer count, or a fraction in (0, 1] of the early-pruned list (never rounded to 0).
  std::variant<std::int64_t, double> top_k = 1.0;
  /// Buffer arguments zeroed before every benchmark run and before the real launch after tuning.
  std::vector<std::string> reset_to_zero{};
  /// Buffer arguments saved before every benchmark run and restored after it.
  std::vector<std::string> restore_value{};
  /// Called before every benchmark run (after the built-in reset/restore handling; unlike Triton,
  /// a user hook does not switch the built-in handling off).
  hook<void(Args&...)> pre_hook{};
  /// Called after every benchmark run, with the exception of a failed run (or null).
  hook<void(std::exception_ptr, Args&...)> post_hook{};
  /// Values computed from the arguments, added to every config as parameters (and to the tuning key).
  std::vector<std::pair<std::string, hook<value(const Args&...)>>> heuristics{};
  /// Data written into module globals (`__constant__` tables, filters) at every load of a candidate,
  /// before on_load: `{{"filter", std::span<const float>(filter)}}`. Each size must equal its global's.
  /// Only backends that find module globals (CUDA, HIP, host) take it; any other refuses it at construction.
  std::vector<module_constant> constants{};
  /// Sets up each loaded binary before it first runs: called once per load of a candidate on a device
  /// (on every device it is measured on, and for the winner after a result-cache hit), with the module
  /// and the arguments valid on that device (or only the leading ones it names: `[&](const
  /// module_view& m) {...}`). Writes `__constant__` data that `constants` cannot express through
  /// `m.global<T>("name").copy_from(...)`. It runs at load time only, never on the tuned call's path;
  /// data that differs between calls of one key belongs in kernel arguments. An exception fails that
  /// candidate (or, for the winner, the call). Only backends that find module globals
  /// (cotune::FindsModuleGlobals: CUDA, HIP, host) take it; any other refuses it at construction.
  hook<void(const module_view&, const Args&...)> on_load{};
  /// Launch geometry of a config for given arguments (GPU backends).
  hook<launch_grid(const config&, const Args&...)> grid{};
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
  hook<std::tuple<Args...>(std::size_t d, const Args&...)> args_for_device{};
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
  hook<std::optional<std::string>(const config&, const Args&...)> verify{};
  /// With verify: before each candidate's verification run, every writable buffer that
  /// reset_to_zero and restore_value do not name is filled with bytes 0xFF (NaN in every floating-point
  /// type, -1 in signed integers; host spans and device spans), so that a candidate that writes
  /// nothing fails instead of passing on the previous candidate's outputs. Pass inputs as views of
  /// const elements (or name in-place buffers in restore_value), or set this to false.
  bool poison_outputs = true;
  /// What a call for a key not tuned yet does; unset: COTUNE_FIRST_CALL (`wait` by default).
  /// `serve`: it launches a stand-in at once (the shipped database's winner for the key, else the
  /// nearest tuned key's winner, else default_config, else the first candidate), the key is tuned in
  /// the background on the engine's threads, and its winner replaces the stand-in for every later call.
  std::optional<first_call_mode> first_call{};
  /// With first_call_mode::serve: the share of the device's time, in (0, 1], that the key's background
  /// tuning measures in (unset: COTUNE_BACKGROUND_SHARE, 0.1 by default). After each measurement the
  /// tuning leaves the device to the program for (1 - share) / share of its time (its device thread
  /// free meanwhile), so that the program's own kernels keep most of the device; 1 = no pauses. A
  /// blocking tuning never pauses.
  std::optional<double> background_share{};
  /// The config a stand-in falls back to before the first candidate (first_call_mode::serve); it is
  /// used when it is among the call's candidates (after pruning; heuristics' values aside).
  std::optional<config> default_config{};
  /// With first_call_mode::serve: the arguments a key's background tuning measures with, made from
  /// its first call's (e.g. views of scratch buffers the program keeps per problem size), on the first
  /// caller's thread (inside its graph capture, if it captures: allocate nothing on the device there,
  /// hand out buffers made before). Unset: the
  /// first call's own arguments, so their buffers must stay valid, and their outputs unread (the
  /// candidates overwrite them), until the key is tuned (autotuner::wait_tuned).
  hook<std::tuple<Args...>(const Args&...)> tuning_args{};
};

} // namespace cotune
