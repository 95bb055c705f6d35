#pragma once
/// \file `cotune::kernel_call`: what a tuning job does with its kernel's arguments, and `bound_call`,
/// the one implementation: the first call of a new key, its arguments copied. The job
/// (tune/tuning_job.hpp) is written without the argument types and reaches them through these four
/// calls only (make the arguments for another device, load with on_load, time one candidate, run the
/// fair finals), so that its coroutines are compiled once per backend, benchmarker and cache. The
/// rest of what the arguments decide (the key's text, the pruned candidates) is computed once, by
/// the autotuner, before the job is made.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <any>
#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/async_queue.hpp>
#include <cotune/tune/detail/backend_traits.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/detail/isolated_measure.hpp>
#include <cotune/tune/detail/kernel_arguments.hpp>
#include <cotune/tune/detail/module_setup.hpp>
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/detail/tuning_timeline.hpp>

namespace cotune {

/// What one tuning's coroutine shares with the tasks it posts on the pools: each candidate's result,
/// binary and function loaded on the launch device, the queue of finished steps, the stop signal.
template <Backend B>
struct tuning_state {
  struct event {
    bool compiled = false; ///< else: a benchmark finished
    std::size_t index = 0, device = 0;
  };
  explicit tuning_state(std::size_t n) : binaries(n), loaded(n) {}
  detail::async_queue<event> events;
  std::vector<candidate_result> results;
  std::vector<std::optional<cached_binary<typename B::binary>>> binaries;
  std::vector<std::optional<typename B::function>> loaded; ///< on the launch device
  std::stop_source stop;
  tuning_timeline timeline; ///< each candidate's phases, for the result's phases and the trace
};

/// A tuning's kernel arguments, as the job (which does not know their types) uses them.
template <Backend B>
class kernel_call {
public:
  using function_type = typename B::function;
  using binary_entry = cached_binary<typename B::binary>;

  virtual ~kernel_call() = default;

  /// Makes the arguments for device `d` (tune_options::args_for_device), before it measures there.
  virtual void add_device(std::size_t d) = 0;
  /// On device `d`'s thread: loads a binary there, writes the constants and runs on_load with that
  /// device's arguments.
  [[nodiscard]] virtual function_type load(const binary_entry& bin, const config& c, std::size_t d) const = 0;
  /// On device `d`'s thread: times candidate `c` (of `n`), loaded there as `fn`: verified first when
  /// the options say so; in the backend's worker when `isolate` and it has one; once, untimed, when it
  /// is the only candidate.
  [[nodiscard]] virtual measurement time(const binary_entry& bin, const function_type& fn, const config& c,
                                         std::size_t d, const bench_options& o, std::size_t n, bool isolate) = 0;
  /// On device `d`'s thread: rounds of the fair finals of `finalists`, all loaded there, going on from
  /// `progress` as `plan` says; the outcomes are recorded once every round is done (interleaved_finals.hpp).
  virtual void measure_finals(tuning_state<B>& state, const std::vector<std::size_t>& finalists, std::size_t d,
                              const bench_options& full, finals_progress& progress, const rounds_plan& plan) = 0;
};

/// A kernel `void(Args...)`'s call as a tuning job uses it: the tuner's core, options and argument
/// roles, and a copy of the arguments (buffers are views: their data must outlive the job).
template <Backend B, class Bench, CacheManager Cache, class... Args>
class bound_call final : public kernel_call<B> {
public:
  using core = tuning_core<B, Bench, Cache>;
  using typename kernel_call<B>::binary_entry;
  using typename kernel_call<B>::function_type;

  bound_call(core& ctx, const tune_options<Args...>& opts, const kernel_arguments<Args...>& arguments, Args... args)
      : ctx_(ctx), opts_(opts), arguments_(arguments), args_(std::forward<Args>(args)...),
        device_args_(ctx.devices.size()) {
    // Tensors bound to a GPU (DLPack) must be on the device the winner launches on, refused here,
    // before any candidate runs, rather than by every candidate's launch.
    if constexpr ((DeviceBoundBuffer<detail::bare<Args>> || ...) && requires { ctx.devices[0].ordinal; }) {
      const auto& d = ctx.devices[ctx.settings.device];
      std::apply([&](const Args&... a) { arguments_.check_devices(d.ordinal, ctx.backend.device_name(d), a...); }, args_);
    }
  }

  void add_device(std::size_t d) override {
    device_args_[d].emplace(std::apply([&](const Args&... a) { return opts_.args_for_device(d, a...); }, args_));
  }

  [[nodiscard]] function_type load(const binary_entry& bin, const config& c, std::size_t d) const override {
    function_type fn = ctx_.load_module(bin, c, d);
    if (opts_.on_load)
      detail::run_on_load(ctx_.backend, fn, opts_.on_load, ctx_.kernel, c, ctx_.devices[d], d, args_on(d));
    return fn;
  }

  [[nodiscard]] measurement time(const binary_entry& bin, const function_type& fn, const config& c, std::size_t d,
                                 const bench_options& bopts, std::size_t n, bool isolate) override {
    Bench& bench = ctx_.benchmarker(d); // made here: an isolated copy inherits it
    const std::string shown = detail::uses_launch_options<B>() ? c.text() : c.params_text();
    return std::apply(
        [&](Args&... xs) -> measurement {
          const launch_grid g = opts_.grid ? opts_.grid(c, xs...) : launch_grid{};
          std::vector<std::any> saved(sizeof...(Args));
          auto once = [&] { arguments_.run_once(ctx_.backend, fn, c, g, saved, xs...); };
          // One candidate: nothing to choose, so nothing to measure (as in Triton): it runs once.
          auto timed = [&]() -> std::vector<double> {
            if (opts_.verify) { // one run, then its outputs are checked before any timing
              tuning_timeline::nested span(trace_phase::verify);
              arguments_.poison_outputs(xs...);
              once();
              if (auto wrong = opts_.verify(c, xs...))
                throw wrong_result(fmt::format("{}kernel '{}' with config {{{}}}: {}", detail::wrong_prefix,
                                               ctx_.kernel.name, shown, *wrong));
            }
            if (n == 1) {
              if (!opts_.verify) once();
              return {0.0, 0.0, 0.0};
            }
            bench_options o = bopts;
            if (arguments_.runs_host_work(c)) o.capturable = false; // no graph replay of host hooks
            // How it was measured travels with the times, so that it comes back from an isolated run.
            if constexpr (ReportsMeasurement<Bench>) return as_values(bench.measure(once, o));
            else {
              auto t = bench.bench(once, o);
              if (t.size() > 3) t.resize(3); // median, p20, p80: only these are read
              return t;
            }
          };
          if constexpr (detail::worker_isolation<B>())
            if (isolate) // nothing: refused by the worker, measured in-process below
              if (auto in_worker =
                      detail::measure_in_worker(ctx_, opts_, arguments_, bin.binary, fn, c, g, bopts, n, shown, xs...))
                return *std::move(in_worker);
          return measurement_of_values(timed()); // fork isolation measures in tuning_job::measure_in_fork
        },
        args_on(d));
  }

  void measure_finals(tuning_state<B>& state, const std::vector<std::size_t>& finalists, std::size_t d,
                      const bench_options& full, finals_progress& progress, const rounds_plan& plan) override {
    cotune::measure_finals(ctx_, opts_, arguments_, state, finalists, args_on(d), d, full, progress, plan);
  }

private:
  /// The arguments valid on device `d`.
  [[nodiscard]] const std::tuple<Args...>& args_on(std::size_t d) const {
    return device_args_[d] ? *device_args_[d] : args_;
  }
  [[nodiscard]] std::tuple<Args...>& args_on(std::size_t d) { return device_args_[d] ? *device_args_[d] : args_; }

  core& ctx_;
  const tune_options<Args...>& opts_;
  const kernel_arguments<Args...>& arguments_;
  std::tuple<Args...> args_;
  std::vector<std::optional<std::tuple<Args...>>> device_args_; ///< made by add_device
};

} // namespace cotune
