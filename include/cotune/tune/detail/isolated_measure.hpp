#pragma once
/// \file How COTUNE_ISOLATE measures one candidate away from the tuning's own process: in a forked
/// copy (backends with `fork_isolation`: the host, a worker of detail/fork_server.hpp) or in the backend's own
/// worker process (`worker_isolation`: CUDA and HIP, gpu/isolation.hpp), and how each ending becomes the
/// candidate's status (crashed, hung, wrong result, launch error).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <memory>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/detail/backend_traits.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune::detail {

/// How a verification failure begins (so that one from an isolated process keeps its status).
inline constexpr std::string_view wrong_prefix = "wrong result: ";

/// The values of an isolated run that returned; otherwise throws the candidate's failure.
/// `process` begins the sentence that says how the process ended ("its isolated benchmark process
/// was " for a fork; empty where `detail` says it).
COTUNE_DECL std::vector<double> isolated_values(isolated_result run, std::string_view kernel, std::string_view shown,
                                           std::string_view process);

class fork_server;
class fork_server_lane;
struct job_result;

/// Which round of the finals a job in the isolated copy times: `round` (from 0), `cold` (the copy's
/// first of these finals: its first round warms up in full), after settling for up to `settle_ms`.
struct finals_round {
  std::size_t round = 0;
  bool cold = true;
  double settle_ms = 0;
};

/// COTUNE_ISOLATE for backends with `fork_isolation` (the host): one tuning's candidates measured one
/// after another in a persistent copy of the process. The copy is a worker of a `fork_server` forked
/// when the tuning measures its first candidate, so it sees the arguments and the compiled binaries
/// as they were then; it loads each candidate itself, so this process loads only the finalists (a fork
/// of a process holding a thousand loaded libraries took ~5 ms on the H200 host, 2026-12-04, against
/// well under 1 ms for this process). A crash or a hang ends the worker and costs that candidate alone:
/// the server forks the next worker. A candidate compiled after the fork (a search's later batch) is
/// not in the copy: the server is replaced, once, by a fresh fork.
class fork_measurer {
public:
  /// Runs in the copy: loads and times candidate `index` with `o`, or nothing when the copy has no
  /// binary for it.
  using measure_fn = std::optional<std::vector<double>> (*)(const void* context, std::size_t index,
                                                             const bench_options& o);

  /// Runs in the copy: one round of a tuning's fair finals of `finalists` on the copy's own loaded
  /// candidates, its samples and failures (`encode_round`), or nothing when the copy has no binary for
  /// one of them.
  using finals_fn = std::optional<std::string> (*)(const void* context, const std::vector<std::size_t>& finalists,
                                                   const bench_options& full, const finals_round& round);

  COTUNE_DECL fork_measurer(measure_fn measure, const void* context, finals_fn finals = nullptr);
  fork_measurer(const fork_measurer&) = delete;
  fork_measurer& operator=(const fork_measurer&) = delete;
  COTUNE_DECL ~fork_measurer();

  /// Candidate `index`'s values (as_values of its measurement), within COTUNE_BENCH_TIMEOUT_MS;
  /// throws the candidate's failure (crashed, hung, wrong result, error) as isolated_values does.
  /// `next`: the candidate likely to be measured next with the same options, sent to the worker now
  /// so that it starts that one as soon as it is done with this one. A wrong guess costs waiting for
  /// that measurement; its outcome is kept and is that candidate's when it is asked for with the same
  /// options, so that one that hangs costs one COTUNE_BENCH_TIMEOUT_MS, not two.
  [[nodiscard]] COTUNE_DECL std::vector<double> measure(std::size_t index, const bench_options& o,
                                                        std::string_view kernel, std::string_view shown,
                                                        std::optional<std::size_t> next = std::nullopt);

  /// Round `round` of the finals of `finalists` as one job in the copy, its reply (`finals_fn`'s) within
  /// `limit`. Nothing when it did not end there, with `why`: the copy crashed or hung (killed; the next
  /// job forks a new one), it threw, or the copy predates a finalist's binary. The caller then measures
  /// the finalists one by one in the copy, so that the one at fault costs only itself.
  [[nodiscard]] COTUNE_DECL std::optional<std::string> finals(const std::vector<std::size_t>& finalists,
                                                              const bench_options& full, const finals_round& round,
                                                              std::chrono::milliseconds limit, std::string& why);

  /// Ends the server and its worker (the next `measure` forks a new one).
  COTUNE_DECL void stop() noexcept;

private:
  /// The fork_server's job: a request (the index and the pass's budgets) in, "R" and the values, or "M".
  static std::string serve(const void* self, std::string_view request);

  /// One request: the candidate and the budgets of its pass (screening or full).
  struct request {
    std::uint64_t index;
    double warmup_ms;
    double rep_ms;
    friend bool operator==(const request&, const request&) = default;
  };

  /// Starts the server and its lane if none runs; the options' other settings become the base.
  void start(const bench_options& o);
  /// A guess sent ahead and not asked for: its outcome kept for when it is (a finals job comes next).
  void drain_ahead(std::chrono::milliseconds limit);

  measure_fn measure_;
  const void* context_;
  finals_fn finals_ = nullptr;
  bench_options base_{}; ///< the options of the first request; later requests change only the budgets
  std::unique_ptr<fork_server> server_;
  std::unique_ptr<fork_server_lane> lane_; ///< the server's worker, held for this measurer's requests
  std::optional<request> ahead_;           ///< sent ahead (`next`), its outcome not yet received
  /// Outcomes of wrong guesses, received but not yet asked for: (request, outcome), oldest first.
  std::vector<std::pair<request, std::unique_ptr<job_result>>> drained_;
};

/// One round of the finals as a forked copy measured it (`progress`: each finalist's samples of that
/// round, or its failure), for `decode_round` in the tuning's process.
[[nodiscard]] COTUNE_DECL std::string encode_round(const finals_progress& progress);
/// Appends what `encode_round` encoded to `progress`: the copy's k-th finalist is `progress`'s `at[k]`-th.
/// False, and nothing added, for bytes that are not a round of exactly that many finalists.
[[nodiscard]] COTUNE_DECL bool decode_round(std::string_view bytes, const std::vector<std::size_t>& at,
                                            finals_progress& progress);

/// Whether this tuning's candidates are measured in isolation: `wanted` (COTUNE_ISOLATE said so), the
/// backend can, and (for a worker) nothing in the options is host code that only this process can
/// run or data that only this process writes (`opts`: anything with pre_hook, post_hook and on_load
/// that test as set or not and a `constants` list, such as tune_options or tuning_settings), and the
/// tuning measures with the backend's own benchmarker (`Bench`: a worker measures with that one, so a
/// benchmarker of the program's own would be bypassed). Sets `warning` when isolation was asked for but
/// cannot be.
template <class B, class Bench = default_benchmarker_t<B>, class Options>
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
  if constexpr (!std::is_same_v<Bench, default_benchmarker_t<B>>)
    add("benchmarker of its own (a worker measures with the backend's)");
  if (opts.pre_hook) add("pre_hook");
  if (opts.post_hook) add("post_hook");
  if (opts.on_load) add("on_load");
  if (!opts.constants.empty()) add("constants (written into this process's modules; a worker loads its own)");
  if (std::any_of(configs.begin(), configs.end(), [](const config& c) { return c.pre_hook() && c.pre_hook()->fn; }))
    add("a config's pre-hook");
  if (hooks.empty()) return true;
  warning = fmt::format("COTUNE_ISOLATE={}{}: this tuning's {} need this process (host code that only it can run), so its "
                        "candidates are measured in-process, not in an isolation worker, and a crash ends the program "
                        "(reset_to_zero, restore_value and verify work in a worker; COTUNE_ISOLATE=off silences this)",
                        mode, mode == "on" ? " (the default)" : "", hooks);
  return false;
}

/// Measures candidate `c` (binary `bin`, loaded here as `fn`) in the backend's worker process: a
/// verification run first when the options verify (the outputs are checked here, in this process's
/// memory, which the worker wrote through), then the measurement. Nothing when the worker refused
/// (an argument it cannot reach, no worker): the caller measures in-process. `ctx` is the tuner's
/// core, `opts` and `arguments` its options and argument roles.
template <class Core, class Options, class Arguments, class Bin, class Fn, class... Args>
std::optional<measurement> measure_in_worker(const Core& ctx, const Options& opts, const Arguments& arguments,
                                             const Bin& bin, const Fn& fn, const config& c, const launch_grid& g,
                                             bench_options o, std::size_t n, std::string_view shown, Args&... xs) {
  worker_task task;
  task.timeout_ms = knobs().bench.timeout_ms.get();
  for (const auto& name : opts.arg_names) {
    const auto& z = opts.reset_to_zero;
    const auto& r = opts.restore_value;
    task.zero.push_back(std::find(z.begin(), z.end(), name) != z.end());
    task.restore.push_back(std::find(r.begin(), r.end(), name) != r.end());
    task.poison.push_back(opts.verify && arguments.poisoned()[task.poison.size()]);
  }
  if (arguments.runs_host_work(c)) o.capturable = false; // as in-process
  auto run = [&](bool timed) -> std::optional<std::vector<double>> {
    task.timed = timed;
    isolated_result r = ctx.backend.run_in_worker(bin, fn, g, task, o, xs...);
    if (r.end == isolated_result::ending::refused) return std::nullopt;
    return isolated_values(std::move(r), ctx.kernel.name, shown, "");
  };
  if (opts.verify) {
    if (!run(false)) return std::nullopt;
    if (auto wrong = opts.verify(c, xs...))
      throw wrong_result(fmt::format("{}kernel '{}' with config {{{}}}: {}", wrong_prefix, ctx.kernel.name, shown, *wrong));
  }
  if (n == 1) { // one candidate: nothing to choose, so it runs once (as in-process)
    if (!opts.verify && !run(false)) return std::nullopt;
    return measurement_of_values({0.0, 0.0, 0.0});
  }
  auto values = run(true);
  if (!values) return std::nullopt;
  return measurement_of_values(*std::move(values));
}

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/isolated_measure.ipp>
#endif
