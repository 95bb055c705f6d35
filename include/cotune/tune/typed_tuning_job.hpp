#pragma once
/// \file `cotune::typed_tuning_job`: a `tuning_job` with its kernel's arguments: the key's text,
/// pruning, the arguments made for other devices, loading with on_load, one candidate's timed runs
/// (verified first, in isolation where asked) and the fair finals. Only this, and not the job's
/// coroutines, is compiled once per kernel signature.

#include <any>
#include <cstddef>
#include <memory>
#include <optional>
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
#include <cotune/tune/backend_traits.hpp>
#include <cotune/tune/interleaved_finals.hpp>
#include <cotune/tune/isolated_measure.hpp>
#include <cotune/tune/tuning_context.hpp>
#include <cotune/tune/tuning_job.hpp>
#include <cotune/tune/tuning_timeline.hpp>

namespace cotune {

/// One key's tuning for a kernel `void(Args...)`, over the tuner's context.
template <Backend B, class Bench, CacheManager Cache, class... Args>
class typed_tuning_job final : public tuning_job<B, Bench, Cache> {
  using base = tuning_job<B, Bench, Cache>;

public:
  using context = tuning_context<B, Bench, Cache, Args...>;
  using typename base::binary_entry;
  using typename base::function_type;

  /// The arguments are copied (buffers are views: their data must outlive the job).
  typed_tuning_job(context& ctx, Args... args)
      : base(ctx), ctx_(ctx), args_(std::forward<Args>(args)...), device_args_(ctx.devices.size()) {}

private:
  using typename base::shared_state;

  [[nodiscard]] std::string arguments_key_text() const override {
    return std::apply([&](const Args&... a) { return ctx_.arguments.key_text(a...); }, args_);
  }

  [[nodiscard]] std::vector<config> prune() const override {
    return std::apply([&](const Args&... a) { return ctx_.prune(a...); }, args_);
  }

  [[nodiscard]] bool isolation_applies(bool wanted, const std::string& mode, const std::vector<config>& pruned,
                                       std::string& why_not) const override {
    return detail::isolation_applies<B>(wanted, mode, ctx_.opts, pruned, why_not);
  }

  void add_device(std::size_t d) override {
    device_args_[d].emplace(std::apply([&](const Args&... a) { return ctx_.opts.args_for_device(d, a...); }, args_));
  }

  /// The arguments valid on device `d`.
  [[nodiscard]] const std::tuple<Args...>& args_on(std::size_t d) const {
    return d == ctx_.settings.device ? args_ : *device_args_[d];
  }
  [[nodiscard]] std::tuple<Args...>& args_on(std::size_t d) {
    return d == ctx_.settings.device ? args_ : *device_args_[d];
  }

  [[nodiscard]] function_type load(const binary_entry& bin, const config& c, std::size_t d) const override {
    return ctx_.load(bin, c, d, args_on(d));
  }

  [[nodiscard]] measurement time(const binary_entry& bin, const function_type& fn, const config& c, std::size_t d,
                                 const bench_options& bopts, std::size_t n, bool isolate) override {
    Bench& bench = ctx_.benchmarker(d); // made here: an isolated copy inherits it
    const std::string shown = base::shown(c);
    return std::apply(
        [&](Args&... xs) -> measurement {
          const launch_grid g = ctx_.opts.grid ? ctx_.opts.grid(c, xs...) : launch_grid{};
          std::vector<std::any> saved(sizeof...(Args));
          auto once = [&] { ctx_.arguments.run_once(ctx_.backend, fn, c, g, saved, xs...); };
          // One candidate: nothing to choose, so nothing to measure (as in Triton): it runs once.
          auto timed = [&]() -> std::vector<double> {
            if (ctx_.opts.verify) { // one run, then its outputs are checked before any timing
              tuning_timeline::nested span(trace_phase::verify);
              ctx_.arguments.poison_outputs(xs...);
              once();
              if (auto wrong = ctx_.opts.verify(c, xs...))
                throw wrong_result(fmt::format("{}kernel '{}' with config {{{}}}: {}", detail::wrong_prefix,
                                               ctx_.kernel.name, shown, *wrong));
            }
            if (n == 1) {
              if (!ctx_.opts.verify) once();
              return {0.0, 0.0, 0.0};
            }
            bench_options o = bopts;
            if (ctx_.arguments.runs_host_work(c)) o.capturable = false; // no graph replay of host hooks
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
              if (auto in_worker = detail::measure_in_worker(ctx_, bin.binary, fn, c, g, bopts, n, shown, xs...))
                return *std::move(in_worker);
          return measurement_of_values(timed()); // fork isolation measures in tuning_job::measure_in_fork
        },
        args_on(d));
  }

  void measure_finals(shared_state& state, const std::vector<std::size_t>& finalists, std::size_t d,
                      const bench_options& full) override {
    cotune::measure_finals(ctx_, state, finalists, args_on(d), d, full);
  }

  context& ctx_;
  std::tuple<Args...> args_;
  std::vector<std::optional<std::tuple<Args...>>> device_args_; ///< made by add_device
};

} // namespace cotune
