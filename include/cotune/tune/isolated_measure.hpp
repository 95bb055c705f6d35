#pragma once
/// \file How COTUNE_ISOLATE measures one candidate away from the tuning's own process: in a forked
/// copy (backends with `fork_isolation`: the host, detail/isolated_run.hpp) or in the backend's own
/// worker process (`worker_isolation`: CUDA and HIP, gpu/isolation.hpp), and how each ending becomes the
/// candidate's status (crashed, hung, wrong result, launch error).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/backend_traits.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune::detail {

/// How a verification failure begins (so that one from an isolated process keeps its status).
inline constexpr std::string_view wrong_prefix = "wrong result: ";

/// The values of an isolated run that returned; otherwise throws the candidate's failure.
/// `process` begins the sentence that says how the process ended ("its isolated benchmark process
/// was " for a fork; empty where `detail` says it).
inline std::vector<double> isolated_values(isolated_result run, std::string_view kernel, std::string_view shown,
                                           std::string_view process) {
  switch (run.end) {
  case isolated_result::ending::returned: return std::move(run.values);
  case isolated_result::ending::threw:
    if (run.detail.starts_with(wrong_prefix)) throw wrong_result(run.detail);
    if (run.kind == 'l') throw launch_error(run.detail);
    throw error(run.detail);
  case isolated_result::ending::crashed:
    throw candidate_crashed(fmt::format("kernel '{}' with config {{{}}}: {}{}; this candidate is lost, the tuning "
                                        "goes on (COTUNE_ISOLATE)",
                                        kernel, shown, process, run.detail));
  case isolated_result::ending::hung:
    throw candidate_hung(fmt::format("kernel '{}' with config {{{}}}: {}{}", kernel, shown, process, run.detail));
  case isolated_result::ending::refused: break;
  }
  throw error(fmt::format("kernel '{}' with config {{{}}}: {}", kernel, shown, run.detail));
}

/// Runs `timed` in a forked copy of the process, at most the bench timeout (plus polling, under 1 s).
template <class F>
std::vector<double> fork_measure(std::string_view kernel, std::string_view shown, F& timed) {
  const auto limit = std::chrono::milliseconds(std::max<std::int64_t>(1, knobs().bench.timeout_ms.get()));
  return isolated_values(run_isolated(timed, limit), kernel, shown, "its isolated benchmark process was ");
}

/// Whether this tuning's candidates are measured in isolation: `wanted` (COTUNE_ISOLATE said so), the
/// backend can, and (for a worker) nothing in the options is host code that only this process can
/// run. Sets `warning` when isolation was asked for but cannot be.
template <class B, class Options>
bool isolation_applies(bool wanted, const std::string& mode, const Options& opts, const std::vector<config>& configs,
                       std::string& warning) {
  if (!wanted) return false;
  if (!can_isolate<B>()) {
    if (mode == "on")
      warning = "COTUNE_ISOLATE=on (the default), but this backend's candidates cannot be measured in another "
                "process: they are measured in-process, where a crash ends the program (a backend opts in with "
                "fork_isolation or worker_isolation; COTUNE_ISOLATE=off silences this)";
    return false;
  }
  if (fork_isolation<B>()) return true; // a forked copy runs every hook itself
  std::string hooks;
  auto add = [&](std::string_view h) { hooks += fmt::format("{}{}", hooks.empty() ? "" : ", ", h); };
  if (opts.pre_hook) add("pre_hook");
  if (opts.post_hook) add("post_hook");
  if (opts.on_load) add("on_load");
  if (std::any_of(configs.begin(), configs.end(), [](const config& c) { return c.pre_hook() && c.pre_hook()->fn; }))
    add("a config's pre-hook");
  if (hooks.empty()) return true;
  warning = fmt::format("COTUNE_ISOLATE={}{}: this tuning's {} are host code that only this process can run, so its "
                        "candidates are measured in-process, not in an isolation worker, and a crash ends the program "
                        "(reset_to_zero, restore_value and verify work in a worker; COTUNE_ISOLATE=off silences this)",
                        mode, mode == "on" ? " (the default)" : "", hooks);
  return false;
}

/// Measures candidate `c` (binary `bin`, loaded here as `fn`) in the backend's worker process: a
/// verification run first when the options verify (the outputs are checked here, in this process's
/// memory, which the worker wrote through), then the measurement. Nothing when the worker refused
/// (an argument it cannot reach, no worker): the caller measures in-process.
template <class Ctx, class Bin, class Fn, class... Args>
std::optional<measurement> measure_in_worker(const Ctx& ctx, const Bin& bin, const Fn& fn, const config& c,
                                             const launch_grid& g, bench_options o, std::size_t n,
                                             std::string_view shown, Args&... xs) {
  worker_task task;
  task.timeout_ms = knobs().bench.timeout_ms.get();
  for (const auto& name : ctx.opts.arg_names) {
    const auto& z = ctx.opts.reset_to_zero;
    const auto& r = ctx.opts.restore_value;
    task.zero.push_back(std::find(z.begin(), z.end(), name) != z.end());
    task.restore.push_back(std::find(r.begin(), r.end(), name) != r.end());
    task.poison.push_back(ctx.opts.verify && ctx.arguments.poisoned()[task.poison.size()]);
  }
  if (ctx.arguments.runs_host_work(c)) o.capturable = false; // as in-process
  auto run = [&](bool timed) -> std::optional<std::vector<double>> {
    task.timed = timed;
    isolated_result r = ctx.backend.run_in_worker(bin, fn, g, task, o, xs...);
    if (r.end == isolated_result::ending::refused) return std::nullopt;
    return isolated_values(std::move(r), ctx.kernel.name, shown, "");
  };
  if (ctx.opts.verify) {
    if (!run(false)) return std::nullopt;
    if (auto wrong = ctx.opts.verify(c, xs...))
      throw wrong_result(fmt::format("{}kernel '{}' with config {{{}}}: {}", wrong_prefix, ctx.kernel.name, shown, *wrong));
  }
  if (n == 1) { // one candidate: nothing to choose, so it runs once (as in-process)
    if (!ctx.opts.verify && !run(false)) return std::nullopt;
    return measurement_of_values({0.0, 0.0, 0.0});
  }
  auto values = run(true);
  if (!values) return std::nullopt;
  return measurement_of_values(*std::move(values));
}

} // namespace cotune::detail
