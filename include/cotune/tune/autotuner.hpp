#pragma once
/// \file `cotune::autotuner`: Triton's Autotuner (spec §3, §4) over the Backend, Benchmarker and
/// CacheManager concepts, driven by Boost.Asio coroutines. The autotuner keeps its options, the roles
/// of its kernel's arguments (tune/kernel_arguments.hpp), the state every tuning shares
/// (tune/tuning_core.hpp), the table of tuned keys and single flight (tune/tuned_keys.hpp) and the
/// hot path (a key, a lookup, a launch). A new key's first call is described once (its key's text and
/// heuristics' values) and pruned; its tuning is a `tuning_job` (tune/tuning_job.hpp) that reaches the
/// call's arguments through a `bound_call` (tune/kernel_call.hpp).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstddef>
#include <optional>
#include <tuple>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/tune/detail/backend_traits.hpp>
#include <cotune/tune/detail/block_on.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/detail/kernel_arguments.hpp>
#include <cotune/tune/detail/kernel_call.hpp>
#include <cotune/tune/detail/module_setup.hpp>
#include <cotune/tune/detail/stand_ins.hpp>
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/detail/tuned_keys.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/detail/tuning_job.hpp>
#include <cotune/tune/detail/warm_up.hpp>
#include <cotune/tune/tuning_key.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The default cache, named here only as a default argument (tune/ names no concrete cache:
/// <cotune/defaults.hpp>, which <cotune/cotune.hpp> includes, defines it).
class file_cache;

namespace detail {

template <class>
inline constexpr bool always_false = false;

} // namespace detail

/// What `autotuner<Signature>` is for anything but a kernel signature `void(Args...)`: an error that says so.
///
/// The backend has no default here, so that this header names no concrete backend;
/// <cotune/defaults.hpp> (included by <cotune/cotune.hpp>) makes the host backend the default.
template <class Signature, Backend B, class Bench = default_benchmarker_t<B>, CacheManager Cache = file_cache>
class autotuner {
  static_assert(detail::always_false<Signature>,
                "cotune::autotuner's first argument is the kernel's signature, void(Args...): kernels return "
                "nothing, and the arguments are what each call passes (e.g. autotuner<void(host_span<const float>, "
                "host_span<float>, int)>)");
};

/// Tunes a kernel `void(Args...)`: picks, per tuning key, the fastest of the candidate configs and
/// launches it. The first call of a key compiles the candidates concurrently, benchmarks them on the
/// device threads and caches the winner; later calls are a table lookup and a launch.
///
///     cotune::autotuner<void(cotune::host_span<const float>, cotune::host_span<float>, int)> tuner{
///         kernel, configs, {.arg_names = {"x", "y", "n"}, .key = {"n"}}};
///     tuner(x, y, n);
template <class... Args, Backend B, class Bench, CacheManager Cache>
class autotuner<void(Args...), B, Bench, Cache> {
  static_assert(Benchmarker<Bench>, "the benchmarker must satisfy cotune::Benchmarker");
  static_assert(LaunchableWith<B, detail::bare<Args>...>, "the backend cannot launch a kernel with these arguments");
  static_assert(detail::capabilities_fit<B>());

public:
  static constexpr std::size_t arity = sizeof...(Args);
  using backend_type = B;
  using device_type = typename B::device;
  using function_type = typename B::function;
  using binary_type = typename B::binary;

  /// How to tune (the parameters of Triton's `autotune` decorator, plus what C++ needs).
  using options = tune_options<Args...>;

  autotuner(kernel_source kernel, std::vector<config> configs, options opts, B backend = B{},
            engine& eng = engine::shared())
      : opts_(std::move(opts)), arguments_(kernel.name, opts_),
        core_(std::move(kernel), std::move(configs), tuning_settings::of(opts_), std::move(backend), eng) {
    detail::check_on_load<B>(opts_.on_load, core_.kernel.name);
    if (opts_.background_share && !(*opts_.background_share > 0 && *opts_.background_share <= 1))
      throw autotuner_error(fmt::format("autotuner for '{}': tune_options::background_share is {}, not a share of device "
                                        "time in (0, 1] (0.1 = a tenth; 1 = no pauses)",
                                        core_.kernel.name, *opts_.background_share));
  }

  autotuner(const autotuner&) = delete;
  autotuner& operator=(const autotuner&) = delete;

  /// Launches the best config for these arguments, tuning first if their key is new. Blocks while
  /// tuning; must not be called from the engine's own threads. With first_call_mode::serve
  /// (tune_options::first_call, COTUNE_FIRST_CALL) a new key's call launches a stand-in instead and
  /// its tuning runs in the background (docs/serving.md).
  void operator()(Args... args) {
    const tuning_key key = arguments_.make_key(args...);
    const entry* e = table_.find(key);
    if (!e) [[unlikely]] {
      first_call(key, args...);
      return;
    }
    launch(*e, args...);
  }

  /// The tuned call on the caller's stream: `tuner.on(stream)(args...)` launches the best config there,
  /// in order with the caller's work and capturable into a graph. It holds the tuner and the stream
  /// only: no allocation, no lock. A key not tuned yet is tuned first (after waiting for the caller's
  /// stream, on cotune's own stream); while the stream is being captured that is an error instead
  /// (tune the key before capturing). With first_call_mode::serve it launches the key's stand-in
  /// instead, also inside a capture, and the key tunes in the background.
  class stream_call {
  public:
    using stream_type = typename B::stream_type;
    stream_call(autotuner& t, stream_type s) noexcept : tuner_(&t), stream_(s) {}

    void operator()(Args... args) const { tuner_->launch_on_stream(stream_, args...); }

  private:
    autotuner* tuner_;
    stream_type stream_;
  };

  /// A call that launches on `stream` (see stream_call). Only for backends that launch on a caller's
  /// stream (cotune::LaunchesOnStreams: CUDA).
  template <class Backend = B>
    requires LaunchableOnStreamWith<Backend, detail::bare<Args>...>
  [[nodiscard]] stream_call on(typename Backend::stream_type stream) noexcept {
    return stream_call(*this, stream);
  }

  /// Tunes these arguments' key if needed (concurrent callers of one key share one tuning) and
  /// returns its result. The arguments are copied into the coroutine (buffers are views: the data
  /// they point to must outlive the call). (The awaitable form of `async_tune`.)
  [[nodiscard]] boost::asio::awaitable<const tuning_result*> tune(Args... args) {
    const tuning_key key = arguments_.make_key(args...);
    entry* e = table_.find(key);
    if (!e) {
      auto tuning = table_.ensure_tuned(key, job_for(args...)); // named: see detail/run_on.hpp
      e = co_await std::move(tuning);
    }
    co_return e->result.get();
  }

  /// Tunes these arguments' key if needed and completes `token` with (error, result), Asio's way:
  /// `use_future` gives a std::future, `use_awaitable` an awaitable, a callable is called on the
  /// engine's coordinator thread. Concurrent callers of one key share one tuning; the result lives
  /// as long as the tuner. Buffers are views: the data they point to must outlive the operation.
  ///
  ///     auto f = tuner.async_tune(x, y, n, boost::asio::use_future); // <boost/asio/use_future.hpp>
  template <boost::asio::completion_token_for<void(std::exception_ptr, const tuning_result*)> Token>
  auto async_tune(Args... args, Token&& token) {
    auto op = tune(std::move(args)...);
    return boost::asio::co_spawn(core_.eng.coordinator(), std::move(op), std::forward<Token>(token));
  }

  /// The result for these arguments' key, tuning first if needed (blocking).
  const tuning_result& tune_now(Args... args) { return *detail::block_on(core_.eng.coordinator(), tune(args...)); }

  /// The best config for these arguments if their key is tuned, else null.
  [[nodiscard]] const config* best_config(const Args&... args) const noexcept {
    const entry* e = table_.find(arguments_.make_key(args...));
    return e ? e->cfg : nullptr;
  }

  /// Compiles every candidate these arguments would try (concurrently), measuring nothing.
  std::vector<candidate_result> warmup(Args... args) {
    std::vector<config> pruned = arguments_.prune(core_.configs, arguments_.describe(args...), args...);
    return detail::block_on(core_.eng.coordinator(), warm_up(core_, std::move(pruned)));
  }

  /// Blocks until every tuning running in the background (first_call_mode::serve) has ended; from
  /// then on every call of those keys launches its winner. Never call it from the engine's threads.
  void wait_tuned() { stand_ins_.wait_idle(); }

  /// How many tunings run in the background now (first_call_mode::serve).
  [[nodiscard]] std::size_t background_tunings() const { return stand_ins_.running(); }

  /// The config a call with these arguments launches now: the key's winner if it is tuned, else its
  /// stand-in while it tunes in the background, else null.
  [[nodiscard]] const config* serving_config(const Args&... args) const noexcept {
    const tuning_key key = arguments_.make_key(args...);
    if (const entry* e = table_.find(key)) return e->cfg;
    const stand_in_type* s = stand_ins_.find(key);
    return s ? &s->cfg : nullptr;
  }

  /// How many keys were tuned by measuring (not served from the result cache).
  [[nodiscard]] std::size_t measured_tunings() const noexcept { return core_.measured.load(); }
  /// How many keys were served from the tuning-result cache.
  [[nodiscard]] std::size_t cached_tunings() const noexcept { return core_.cached.load(); }
  /// How many candidate compiles ran (including binary cache hits).
  [[nodiscard]] std::size_t compiles() const noexcept { return core_.compiles.load(); }
  [[nodiscard]] const kernel_source& kernel() const noexcept { return core_.kernel; }
  [[nodiscard]] const std::vector<config>& configs() const noexcept { return core_.configs; }
  [[nodiscard]] const B& backend() const noexcept { return core_.backend; }

  /// The text of the key these arguments select, as printed and hashed into the result cache.
  [[nodiscard]] std::string key_text(const Args&... args) const { return arguments_.key_text(args...); }

private:
  using keys = detail::tuned_keys<B, Bench, Cache>;
  using entry = typename keys::entry;

  using stand_in_type = detail::stand_in<B>;

  /// A call whose key is not in the table of tuned keys: its stand-in (first_call_mode::serve), else
  /// its tuning (blocking), then the winner. Out of line: the tuned call stays a lookup and a launch.
  void first_call(const tuning_key& key, Args&... args) {
    if (stand_in_type* s = stand_in_for(key, args...)) {
      serve(*s, [&] { launch_config(s->cfg, s->fn, args...); });
      return;
    }
    const entry* e = table_.tune_blocking(core_.eng, key, job_for(args...));
    arguments_.reset_buffers(args...); // Triton's reset-only pre-hook before the real launch
    launch(*e, args...);
  }

  /// A config as this backend sees it (no launch options where it has none).
  [[nodiscard]] static std::string shown(const config& c) {
    return detail::uses_launch_options<B>() ? c.text() : c.params_text();
  }

  /// Runs config `c`'s pre-hook and returns its launch geometry: what every launch of a config does
  /// first.
  [[nodiscard]] launch_grid prepare(const config& c, Args&... args) const {
    arguments_.config_pre_hook(c, args...);
    return opts_.grid ? opts_.grid(c, args...) : launch_grid{};
  }

  void launch(const entry& e, Args&... args) const { launch_config(*e.cfg, e.fn, args...); }

  void launch_config(const config& c, const function_type& fn, Args&... args) const {
    const launch_grid g = prepare(c, args...);
    core_.backend.launch(fn, g, args...);
  }

  /// Whether a call for a key not tuned yet launches a stand-in (the options, else COTUNE_FIRST_CALL).
  [[nodiscard]] bool serves_first_calls() const {
    if (opts_.first_call) return *opts_.first_call == first_call_mode::serve;
    return knobs().autotuning.first_call.get() == "serve";
  }

  /// The share of device time background tunings measure in (the options, else COTUNE_BACKGROUND_SHARE).
  [[nodiscard]] double background_share() const {
    return opts_.background_share.value_or(knobs().autotuning.background_share.get());
  }

  /// The stand-in of a key not tuned yet, when first calls are served: found (no lock), or chosen,
  /// compiled and loaded now (the key's first call; its tuning starts in the background); null when
  /// the call must wait for the tuning instead (first calls wait, no stand-in could be built, or the
  /// stand-in was retired after a launch of it threw).
  stand_in_type* stand_in_for(const tuning_key& key, Args&... args) {
    bool known = false;
    if (stand_in_type* s = stand_ins_.find(key, &known)) return s;
    if (known || !serves_first_calls()) return nullptr;
    return stand_ins_.get_or_make(
        key, [&] { return make_stand_in(args...); }, [&](stand_in_type& s) { tune_in_background(key, s, args...); });
  }

  /// Launches a stand-in (`launch()`), counting the call. A launch that throws retires it: this call
  /// gets the exception, later calls of the key wait for its tuning (which goes on, unaffected: the
  /// stand-in is one candidate among the others there).
  template <class Launch>
  void serve(stand_in_type& s, Launch&& launch) {
    s.served.fetch_add(1, std::memory_order_relaxed);
    try {
      launch();
    } catch (const std::exception& e) {
      if (!s.retired.exchange(true))
        core_.emit(tuning_warning{core_.kernel.name,
                                  fmt::format("the stand-in {{{}}} for key ({}) failed to launch ({}); later calls of "
                                              "the key wait for its tuning",
                                              shown(s.cfg), s.key_text, e.what())});
      throw;
    }
  }

  /// The names of the options' heuristics (whose parameters differ from key to key, so that a winner
  /// of one key matches a candidate of another with them ignored: detail::same_choice).
  [[nodiscard]] std::vector<std::string> heuristic_names() const {
    std::vector<std::string> names;
    for (const auto& h : opts_.heuristics) names.push_back(h.first);
    return names;
  }

  /// How many neighbours' winners seed a new key's search. 4: a few starting points, not a restriction;
  /// a search of 32 evaluations (the smallest default budget) keeps 28 of its own.
  static constexpr std::size_t transfer_neighbours = 4;

  /// The key's stand-in, compiled (or taken from the binary cache) and loaded on the launch device: the
  /// first of its choices that compiles and loads; null when none does (the call then waits for the
  /// tuning, which reports each candidate's failure).
  std::unique_ptr<stand_in_type> make_stand_in(Args&... args) {
    detail::ensure_process_setup<B>(); // the shipped database's lookup
    call_description d = arguments_.describe(args...);
    std::vector<config> pruned = arguments_.prune(core_.configs, d, args...);
    const std::size_t dev = core_.settings.device;
    std::string unusable;
    const std::optional<config> shipped = detail::shipped_winner(
        core_.kernel.name, d.key_text, [&] { return std::string(core_.backend.device_name(core_.devices[dev])); },
        pruned, unusable);
    if (!unusable.empty()) core_.emit(tuning_warning{core_.kernel.name, std::move(unusable)});
    const auto choices = detail::stand_in_choices(d.key_text, pruned, heuristic_names(), shipped, table_.results(),
                                                  opts_.default_config);
    for (const auto& choice : choices) {
      const config& c = pruned[choice.index];
      try {
        const auto bin = core_.compile(c, core_.devices[dev], {});
        const bound_call<B, Bench, Cache, Args...> call(core_, opts_, arguments_, args...);
        auto fn = core_.load_on_device(dev, [&] { return call.load(bin, c, dev); }); // on the device's thread
        auto s = std::make_unique<stand_in_type>(c, std::move(fn), choice.source, d.key_text);
        core_.emit(stand_in_served{core_.kernel.name, d.key_text, &s->cfg, choice.source, choice.neighbour});
        return s;
      } catch (const std::exception& e) {
        core_.emit(tuning_warning{core_.kernel.name,
                                  fmt::format("the stand-in {{{}}} ({}) for key ({}) could not be compiled or loaded: {}",
                                              shown(c), to_string(choice.source), d.key_text, e.what())});
      }
    }
    return nullptr;
  }

  /// Starts the key's tuning on the engine's coordinator (single flight with any caller that waits for
  /// it); its winner enters the table of tuned keys, which later calls read first.
  void tune_in_background(const tuning_key& key, stand_in_type& s, Args&... args) {
    std::function<std::shared_ptr<typename keys::job>()> make;
    if (opts_.tuning_args) {
      std::tuple<Args...> own = opts_.tuning_args(args...);
      make = std::apply([this](Args&... a) { return job_for(a...); }, own);
    } else {
      make = job_for(args...);
    }
    make = [make = std::move(make), share = background_share()] {
      auto job = make();
      job->in_background(share);
      return job;
    };
    stand_ins_.begin_background(); // ended by the completion below, or here if the tuning cannot start
    try {
      table_.tune_detached(core_.eng, key, std::move(make), [this, &s](std::exception_ptr error, entry* e) {
        // Last, also when an observer throws: the tuner may be destroyed from then on.
        struct ended {
          detail::stand_ins<B>& table;
          ~ended() { table.end_background(); }
        } end{stand_ins_};
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s.since).count();
        if (error) {
          std::string why = "unknown error";
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& ex) {
            why = ex.what();
          } catch (...) {
          }
          core_.emit(tuning_warning{core_.kernel.name, fmt::format("the background tuning of key ({}) failed; its "
                                                                   "stand-in {{{}}} goes on serving: {}",
                                                                   s.key_text, shown(s.cfg), why)});
        }
        core_.emit(stand_in_replaced{core_.kernel.name, s.key_text, &s.cfg, e ? e->cfg : nullptr,
                                     s.served.load(std::memory_order_relaxed), ms,
                                     e && e->result ? e->result->background : background_measurement{}});
      });
    } catch (...) {
      stand_ins_.end_background();
      throw;
    }
  }

  template <class Stream>
  void launch_on_stream(Stream stream, Args&... args) {
    const tuning_key key = arguments_.make_key(args...);
    entry* e = table_.find(key);
    if (!e) [[unlikely]] {
      // first_call_mode::serve: the stand-in, also inside a capture (it is compiled and loaded on
      // cotune's threads; the tuning runs in the background, never in the capture).
      if (stand_in_type* s = stand_in_for(key, args...)) {
        serve(*s, [&] {
          const launch_grid g = prepare(s->cfg, args...);
          core_.backend.launch_on(stream, s->fn, g, args...);
        });
        return;
      }
      // Tuning allocates, synchronizes and launches on other streams: inside a capture that would
      // invalidate the caller's graph (or be captured into it), so it is refused with the fix.
      if (core_.backend.is_capturing(stream))
        throw autotuner_error(fmt::format(
            "autotuner for '{}': the key ({}) is not tuned yet and the stream is being captured into a graph; "
            "tuning cannot run inside a capture. Tune the key before capturing: call tuner.tune_now(args...) or "
            "make one ordinary call (tuner(args...) or tuner.on(stream)(args...)) outside the capture "
            "(tuner.warmup(args...) only compiles)",
            core_.kernel.name, arguments_.key_text(args...)));
      core_.backend.synchronize_stream(stream); // the caller's work on its buffers comes first
      e = table_.tune_blocking(core_.eng, key, job_for(args...));
      arguments_.reset_buffers(args...);
      core_.backend.synchronize(e->fn); // the zeroing, on cotune's stream, before the launch on the caller's
    }
    const launch_grid g = prepare(*e->cfg, args...);
    core_.backend.launch_on(stream, e->fn, g, args...);
  }

  /// What makes this key's tuning job, for its first caller (single flight: tune/tuned_keys.hpp): the
  /// call described (its arguments walked once, each heuristic run once), pruned, and bound.
  std::function<std::shared_ptr<typename keys::job>()> job_for(Args&... args) {
    return [this, args...]() mutable {
      call_description d = arguments_.describe(args...);
      std::vector<config> pruned = arguments_.prune(core_.configs, d, args...);
      std::vector<std::size_t> seeds =
          detail::nearest_winners(d.key_text, pruned, heuristic_names(), table_.results(), transfer_neighbours);
      auto call = std::make_unique<bound_call<B, Bench, Cache, Args...>>(core_, opts_, arguments_, args...);
      return std::make_shared<typename keys::job>(core_, std::move(d.key_text), std::move(pruned), std::move(call),
                                                  std::move(seeds));
    };
  }

  const options opts_;
  const kernel_arguments<Args...> arguments_; ///< points into opts_
  tuning_core<B, Bench, Cache> core_;
  keys table_;
  detail::stand_ins<B> stand_ins_; ///< last: destroyed first, it waits for the background tunings
};

} // namespace cotune
