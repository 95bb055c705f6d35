#pragma once
/// \file `cotune::autotuner`: Triton's Autotuner (spec §3, §4) over the Backend, Benchmarker and
/// CacheManager concepts, driven by Boost.Asio coroutines. The autotuner keeps its options, the roles
/// of its kernel's arguments (tune/kernel_arguments.hpp), the state every tuning shares
/// (tune/tuning_core.hpp), the table of tuned keys and single flight (tune/tuned_keys.hpp) and the
/// hot path (a key, a lookup, a launch). A new key's first call is described once (its key's text and
/// heuristics' values) and pruned; its tuning is a `tuning_job` (tune/tuning_job.hpp) that reaches the
/// call's arguments through a `bound_call` (tune/kernel_call.hpp).

#include <cstddef>
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
#include <cotune/tune/tune_options.hpp>
#include <cotune/tune/detail/tuned_keys.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/detail/tuning_job.hpp>
#include <cotune/tune/detail/warm_up.hpp>
#include <cotune/tune/tuning_key.hpp>
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
  }

  autotuner(const autotuner&) = delete;
  autotuner& operator=(const autotuner&) = delete;

  /// Launches the best config for these arguments, tuning first if their key is new. Blocks while
  /// tuning; must not be called from the engine's own threads.
  void operator()(Args... args) {
    const tuning_key key = arguments_.make_key(args...);
    entry* e = table_.find(key);
    if (!e) [[unlikely]] {
      e = table_.tune_blocking(core_.eng, key, job_for(args...));
      arguments_.reset_buffers(args...); // Triton's reset-only pre-hook before the real launch
    }
    launch(*e, args...);
  }

  /// The tuned call on the caller's stream: `tuner.on(stream)(args...)` launches the best config there,
  /// in order with the caller's work and capturable into a graph. It holds the tuner and the stream
  /// only: no allocation, no lock. A key not tuned yet is tuned first (after waiting for the caller's
  /// stream, on cotune's own stream); while the stream is being captured that is an error instead
  /// (tune the key before capturing).
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

  void launch(const entry& e, Args&... args) const {
    arguments_.config_pre_hook(*e.cfg, args...);
    const launch_grid g = opts_.grid ? opts_.grid(*e.cfg, args...) : launch_grid{};
    core_.backend.launch(e.fn, g, args...);
  }

  template <class Stream>
  void launch_on_stream(Stream stream, Args&... args) {
    const tuning_key key = arguments_.make_key(args...);
    entry* e = table_.find(key);
    if (!e) [[unlikely]] {
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
    arguments_.config_pre_hook(*e->cfg, args...);
    const launch_grid g = opts_.grid ? opts_.grid(*e->cfg, args...) : launch_grid{};
    core_.backend.launch_on(stream, e->fn, g, args...);
  }

  /// What makes this key's tuning job, for its first caller (single flight: tune/tuned_keys.hpp): the
  /// call described (its arguments walked once, each heuristic run once), pruned, and bound.
  std::function<std::shared_ptr<typename keys::job>()> job_for(Args&... args) {
    return [this, args...]() mutable {
      call_description d = arguments_.describe(args...);
      std::vector<config> pruned = arguments_.prune(core_.configs, d, args...);
      auto call = std::make_unique<bound_call<B, Bench, Cache, Args...>>(core_, opts_, arguments_, args...);
      return std::make_shared<typename keys::job>(core_, std::move(d.key_text), std::move(pruned), std::move(call));
    };
  }

  const options opts_;
  const kernel_arguments<Args...> arguments_; ///< points into opts_
  tuning_core<B, Bench, Cache> core_;
  keys table_;
};

} // namespace cotune
