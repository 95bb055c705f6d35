#pragma once
/// \file `cotune::autotuner`: Triton's Autotuner (spec §3, §4) over the Backend, Benchmarker and
/// CacheManager concepts, driven by Boost.Asio coroutines.

#include <any>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <cotune/backend/backend.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/async_queue.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/read_mostly_map.hpp>
#include <cotune/detail/run_on.hpp>
#include <cotune/detail/shared_result.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/coordination.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/measure_strategy.hpp>
#include <cotune/tune/tuning_key.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// The benchmarker a backend is measured with unless the tuner names another: the backend's
/// `default_benchmarker_type` if it declares one (so that the choice cannot depend on include order),
/// else the host clock.
template <class B>
struct default_benchmarker {
  using type = host_benchmarker;
};
template <DeclaresBenchmarker B>
struct default_benchmarker<B> {
  using type = typename B::default_benchmarker_type;
};
template <class B>
using default_benchmarker_t = typename default_benchmarker<B>::type;

namespace detail {

/// Makes a benchmarker for a device: from (backend, device) if it can, else default-constructed.
template <class Bench, class B>
std::unique_ptr<Bench> make_benchmarker(const B& backend, const typename B::device& d) {
  if constexpr (std::is_constructible_v<Bench, const B&, const typename B::device&>)
    return std::make_unique<Bench>(backend, d);
  else
    return std::make_unique<Bench>();
}

/// Backends whose benchmarks share the CPU with compiles (the host backend) are measured only after
/// every candidate is compiled, so that compiles running beside them do not skew their timings.
template <class B>
constexpr bool overlaps_compile() {
  if constexpr (DeclaresCompileOverlap<B>) return B::benchmark_overlaps_compile;
  else return true;
}

/// Refuses an optional capability that a backend spells but does not fit: a member that is there with
/// the wrong shape would otherwise switch the feature off without a word.
template <class B>
constexpr bool capabilities_fit() {
  static_assert(HasDeviceKey<B> || !requires { &B::device_key; },
                "the backend's device_key must be `std::string device_key(const device&) const` (it names the "
                "physical device, so that all tuners on it share one device thread)");
  static_assert(DeclaresCompileOverlap<B> || !requires { B::benchmark_overlaps_compile; },
                "the backend's benchmark_overlaps_compile must be `static constexpr bool`");
  static_assert(ComparesDevices<B> || !requires { &B::interchangeable; },
                "the backend's interchangeable must be `bool interchangeable(const device&, const device&) const` "
                "(or static)");
  static_assert(ReportsBinaryCacheHit<B> || !requires(const typename B::binary& bin) { bin.from_cache; },
                "the backend's binary::from_cache must be convertible to bool");
  static_assert(ReportsUncachedBinary<B> || !requires(const typename B::binary& bin) { bin.not_cached; },
                "the backend's binary::not_cached must be a string (why the binary is not in the cache)");
  return true;
}

template <class T>
using bare = std::remove_cvref_t<T>;

/// Calls f(arg, index) for each element of a tuple, in order.
template <class Tuple, class F>
void for_each_indexed(Tuple& t, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::get<I>(t), I), ...);
  }(std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tuple>>>{});
}

[[nodiscard]] inline std::uint64_t value_word(const value& v) {
  if (v.is_int()) return static_cast<std::uint64_t>(v.as_int());
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_double()) return std::bit_cast<std::uint64_t>(v.as_double());
  return std::hash<std::string>{}(v.as_string());
}

struct tuning_key_hasher {
  std::size_t operator()(const tuning_key& k) const noexcept { return k.hash(); }
};

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
  struct options {
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
  };

  autotuner(kernel_source kernel, std::vector<config> configs, options opts, B backend = B{},
            engine& eng = engine::shared())
      : kernel_(std::move(kernel)), configs_(std::move(configs)), opts_(std::move(opts)), backend_(std::move(backend)),
        engine_(&eng) {
    if (configs_.empty()) configs_.push_back(config{}); // Triton's single default config
    if (opts_.arg_names.size() != arity)
      throw autotuner_error(fmt::format("autotuner for '{}': {} argument names given, but the kernel takes {}",
                                        kernel_.name, opts_.arg_names.size(), arity));
    devices_ = backend_.devices();
    if (devices_.empty())
      throw autotuner_error(fmt::format("autotuner for '{}': the backend has no device to run on", kernel_.name));
    if (opts_.device >= devices_.size())
      throw autotuner_error(fmt::format("autotuner for '{}': device {} requested, but the backend has {}", kernel_.name,
                                        opts_.device, devices_.size()));
    for (std::size_t d = 0; d < devices_.size(); ++d) device_ids_.push_back(device_key(d));
    is_key_.assign(arity, false);
    is_reset_.assign(arity, false);
    is_restore_.assign(arity, false);
    mark(opts_.key, is_key_, "key", [](bool scalar, bool buffer) { return scalar || buffer; });
    mark(opts_.reset_to_zero, is_reset_, "reset_to_zero", [](bool, bool buffer) { return buffer; });
    mark(opts_.restore_value, is_restore_, "restore_value", [](bool, bool buffer) { return buffer; });
    std::size_t words = opts_.heuristics.size();
    std::tuple<detail::bare<Args>*...> probe{};
    detail::for_each_indexed(probe, [&](auto* p, std::size_t i) {
      using A = std::remove_pointer_t<decltype(p)>;
      if constexpr (Buffer<A>) words += is_key_[i] ? 2 : 1;
      else words += is_key_[i] ? 1 : 0;
    });
    if (words > tuning_key::capacity)
      throw autotuner_error(fmt::format("autotuner for '{}': the tuning key needs {} words, at most {} are supported",
                                        kernel_.name, words, tuning_key::capacity));
    for (const auto& [name, fn] : opts_.heuristics)
      if (!is_identifier(name))
        throw autotuner_error(fmt::format("autotuner for '{}': heuristic name '{}' is not a C identifier", kernel_.name, name));
    for (std::size_t i = 0; i < arity; ++i) types_[i] = arg_types()[i];
  }

  autotuner(const autotuner&) = delete;
  autotuner& operator=(const autotuner&) = delete;

  /// Launches the best config for these arguments, tuning first if their key is new. Blocks while
  /// tuning; must not be called from the engine's own threads.
  void operator()(Args... args) {
    const tuning_key key = make_key(args...);
    entry* e = table_.find(key);
    if (!e) [[unlikely]] {
      e = boost::asio::co_spawn(engine_->coordinator(), ensure_tuned(key, args...), boost::asio::use_future).get();
      reset_buffers(args...); // Triton's reset-only pre-hook before the real launch
    }
    launch(*e, args...);
  }

  /// Tunes these arguments' key if needed (concurrent callers of one key share one tuning) and
  /// returns its result. The arguments are copied into the coroutine (buffers are views: the data
  /// they point to must outlive the call).
  /// (The awaitable form of `async_tune`.)
  [[nodiscard]] boost::asio::awaitable<const tuning_result*> tune(Args... args) {
    const tuning_key key = make_key(args...);
    entry* e = table_.find(key);
    if (!e) {
      auto tuning = ensure_tuned(key, args...); // named: see detail/run_on.hpp
      e = co_await std::move(tuning);
    }
    co_return e->result.get();
  }

  /// Tunes these arguments' key if needed and completes `token` with (error, result), Asio's way:
  /// `use_future` gives a std::future, `use_awaitable` an awaitable, a callable is called on the
  /// engine's coordinator thread. Concurrent callers of one key share one tuning; the result lives
  /// as long as the tuner. Buffers are views: the data they point to must outlive the operation.
  ///
  ///     auto f = tuner.async_tune(x, y, n, boost::asio::use_future);
  template <boost::asio::completion_token_for<void(std::exception_ptr, const tuning_result*)> Token>
  auto async_tune(Args... args, Token&& token) {
    auto op = tune(std::move(args)...);
    return boost::asio::co_spawn(engine_->coordinator(), std::move(op), std::forward<Token>(token));
  }

  /// The result for these arguments' key, tuning first if needed (blocking).
  const tuning_result& tune_now(Args... args) {
    return *async_tune(args..., boost::asio::use_future).get();
  }

  /// The best config for these arguments if their key is tuned, else null.
  [[nodiscard]] const config* best_config(const Args&... args) const noexcept {
    const entry* e = table_.find(make_key(args...));
    return e ? e->cfg : nullptr;
  }

  /// Compiles every candidate these arguments would try (concurrently), measuring nothing.
  std::vector<candidate_result> warmup(Args... args) {
    return boost::asio::co_spawn(engine_->coordinator(), warmup_async(args...), boost::asio::use_future).get();
  }

  /// How many keys were tuned by measuring (not served from the result cache).
  [[nodiscard]] std::size_t measured_tunings() const noexcept { return measured_.load(); }
  /// How many keys were served from the tuning-result cache.
  [[nodiscard]] std::size_t cached_tunings() const noexcept { return cached_.load(); }
  /// How many candidate compiles ran (including binary cache hits).
  [[nodiscard]] std::size_t compiles() const noexcept { return compiles_.load(); }
  [[nodiscard]] const kernel_source& kernel() const noexcept { return kernel_; }
  [[nodiscard]] const std::vector<config>& configs() const noexcept { return configs_; }
  [[nodiscard]] const B& backend() const noexcept { return backend_; }

  /// The text of the key these arguments select, as printed and hashed into the result cache.
  [[nodiscard]] std::string key_text(const Args&... args) const {
    std::string out;
    auto add = [&](std::string part) { out += (out.empty() ? "" : ", ") + part; };
    std::tuple<const Args&...> t(args...);
    detail::for_each_indexed(t, [&](const auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      const auto& name = opts_.arg_names[i];
      if constexpr (Buffer<A>) {
        if (is_key_[i]) add(fmt::format("{}: {}[{}]", name, a.element_type_name(), a.size()));
        else add(fmt::format("{}: {}", name, a.element_type_name()));
      } else if constexpr (detail::key_scalar<A>) {
        if (is_key_[i]) add(fmt::format("{}={}", name, value_of(a).text()));
      }
    });
    for (const auto& [name, fn] : opts_.heuristics) add(fmt::format("{}={}", name, fn(args...).text()));
    return out;
  }

private:
  struct entry {
    const config* cfg = nullptr;
    function_type fn;
    std::shared_ptr<const tuning_result> result;
  };
  /// One tuning in progress: its leader sets the outcome, later callers of the key await it.
  using flight = detail::shared_result<entry*>;

  static const std::array<const std::type_info*, arity>& arg_types() {
    static const std::array<const std::type_info*, arity> types{&typeid(detail::bare<Args>)...};
    return types;
  }

  template <class A>
  static value value_of(const A& a) {
    if constexpr (std::is_enum_v<A>) return value(static_cast<std::int64_t>(a));
    else if constexpr (std::is_same_v<A, bool>) return value(a);
    else if constexpr (std::is_floating_point_v<A>) return value(static_cast<double>(a));
    else return value(static_cast<std::int64_t>(a));
  }

  template <class Allowed>
  void mark(const std::vector<std::string>& names, std::vector<bool>& flags, const char* what, Allowed allowed) {
    std::tuple<detail::bare<Args>*...> probe{};
    for (const auto& name : names) {
      bool found = false;
      detail::for_each_indexed(probe, [&](auto* p, std::size_t i) {
        using A = std::remove_pointer_t<decltype(p)>;
        if (opts_.arg_names[i] != name) return;
        found = true;
        if (!allowed(detail::key_scalar<A>, Buffer<A>))
          throw autotuner_error(fmt::format("autotuner for '{}': argument '{}' cannot be used in {} (it is neither "
                                            "a scalar nor a cotune::Buffer)",
                                            kernel_.name, name, what));
        flags[i] = true;
      });
      if (!found) {
        std::string known;
        for (const auto& n : opts_.arg_names) known += (known.empty() ? "" : ", ") + n;
        throw autotuner_error(fmt::format("autotuner for '{}': {} names '{}', which is not an argument (arguments: {})",
                                          kernel_.name, what, name, known));
      }
    }
  }

  [[nodiscard]] tuning_key make_key(const Args&... args) const {
    tuning_key key;
    std::tuple<const Args&...> t(args...);
    detail::for_each_indexed(t, [&](const auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      if constexpr (Buffer<A>) {
        key.push(detail::element_type_word(a));
        if (is_key_[i]) key.push(static_cast<std::uint64_t>(a.size()));
      } else if constexpr (detail::key_scalar<A>) {
        if (is_key_[i]) key.push(detail::key_word(a));
      }
    });
    for (const auto& h : opts_.heuristics) key.push(detail::value_word(h.second(args...)));
    return key;
  }

  // --- hooks -------------------------------------------------------------------------------------
  void reset_buffers(Args&... args) const {
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      if constexpr (Buffer<detail::bare<decltype(a)>>)
        if (is_reset_[i]) a.zero();
    });
  }
  void builtin_pre(std::vector<std::any>& saved, Args&... args) const {
    reset_buffers(args...);
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      if constexpr (Buffer<detail::bare<decltype(a)>>)
        // Held through a shared_ptr: std::any needs a copyable value, and device snapshots are move-only.
        if (is_restore_[i])
          saved[i] = std::make_shared<const typename detail::bare<decltype(a)>::snapshot_type>(a.snapshot());
    });
  }
  void builtin_post(std::vector<std::any>& saved, Args&... args) const {
    std::tuple<Args&...> t(args...);
    detail::for_each_indexed(t, [&](auto& a, std::size_t i) {
      using A = detail::bare<decltype(a)>;
      if constexpr (Buffer<A>)
        if (is_restore_[i] && saved[i].has_value()) {
          a.restore(*std::any_cast<const std::shared_ptr<const typename A::snapshot_type>&>(saved[i]));
          saved[i].reset();
        }
    });
  }
  void config_pre_hook(const config& c, Args&... args) const {
    if (!c.pre_hook() || !c.pre_hook()->fn) return;
    std::array<void*, arity> ptrs{const_cast<void*>(static_cast<const void*>(std::addressof(args)))...};
    c.pre_hook()->fn(hook_args{c, ptrs, types_, opts_.arg_names});
  }

  /// One benchmark run: config pre-hook, built-in and user pre-hooks, the launch, then the post
  /// hooks, which always run (and see the exception if the launch failed).
  void run_once(const function_type& fn, const config& c, const launch_grid& g, std::vector<std::any>& saved,
                Args&... args) const {
    config_pre_hook(c, args...);
    builtin_pre(saved, args...);
    if (opts_.pre_hook) opts_.pre_hook(args...);
    try {
      backend_.launch(fn, g, args...);
    } catch (...) {
      auto failure = std::current_exception();
      builtin_post(saved, args...);
      if (opts_.post_hook) opts_.post_hook(failure, args...);
      throw;
    }
    builtin_post(saved, args...);
    if (opts_.post_hook) opts_.post_hook(nullptr, args...);
  }

  void launch(const entry& e, Args&... args) const {
    config_pre_hook(*e.cfg, args...);
    const launch_grid g = opts_.grid ? opts_.grid(*e.cfg, args...) : launch_grid{};
    backend_.launch(e.fn, g, args...);
  }

  // --- pruning -----------------------------------------------------------------------------------
  std::vector<config> prune(const Args&... args) const {
    std::vector<config> pruned = configs_;
    if (opts_.early_config_prune) {
      pruned = opts_.early_config_prune(configs_, args...);
      if (pruned.empty())
        throw autotuner_error(fmt::format("autotuner for '{}': no configs left after early_config_prune (key {}); "
                                          "it must return at least one config",
                                          kernel_.name, key_text(args...)));
    }
    if (opts_.perf_model) {
      std::size_t k = 0;
      if (auto* n = std::get_if<std::int64_t>(&opts_.top_k)) {
        if (*n < 1) throw autotuner_error(fmt::format("autotuner for '{}': top_k must be at least 1 (got {})", kernel_.name, *n));
        k = static_cast<std::size_t>(*n);
      } else {
        double f = std::get<double>(opts_.top_k);
        if (!(f > 0.0 && f <= 1.0))
          throw autotuner_error(fmt::format("autotuner for '{}': a fractional top_k must be in (0, 1] (got {})", kernel_.name, f));
        // Of the early-pruned list (Triton counts the unpruned list), and never 0.
        k = std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(pruned.size()) * f));
      }
      if (pruned.size() > k) {
        std::vector<std::pair<double, std::size_t>> scored;
        for (std::size_t i = 0; i < pruned.size(); ++i) scored.emplace_back(opts_.perf_model(pruned[i], args...), i);
        std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
        std::vector<config> kept;
        for (std::size_t i = 0; i < k; ++i) kept.push_back(pruned[scored[i].second]);
        pruned = std::move(kept);
      }
    }
    for (const auto& [name, fn] : opts_.heuristics) {
      value v = fn(args...);
      for (auto& c : pruned) {
        if (c.contains(name))
          throw autotuner_error(fmt::format("autotuner for '{}': conflicting meta-parameters: heuristic '{}' is also "
                                            "a parameter of config {{{}}}; don't re-define auto-tuned symbols",
                                            kernel_.name, name, c.text()));
        c.set(name, v);
      }
    }
    return pruned;
  }

  // --- events ------------------------------------------------------------------------------------
  void emit(const tuning_event& e) const {
    for (const auto& o : opts_.observers) o->notify(e);
    static printing_observer printer(stderr, true, true);
    static printing_observer progress(stderr, false, true);
    static printing_observer warnings_only(stderr, false, false);
    if (knobs().autotuning.print.get()) printer.notify(e);
    else if (knobs().autotuning.progress.get()) progress.notify(e);
    else warnings_only.notify(e);
  }

  // --- the result cache --------------------------------------------------------------------------
  [[nodiscard]] bool cache_results() const { return opts_.cache_results.value_or(knobs().autotuning.cache.get()); }

  /// SHA-256 over cotune's version, the backend's fingerprint, the kernel (source and compile options),
  /// the set cache-invalidating knobs, the tuning key and the candidate list.
  [[nodiscard]] std::string result_key(const std::string& key_text, const std::vector<config>& pruned) const {
    detail::sha256_hasher h;
    h.field("cotune-tuning-result").field(version).field(std::to_string(cache_format_version));
    h.field(backend_.fingerprint(devices_[opts_.device])).field(kernel_.digest());
    h.field(knob_registry::instance().invalidating_text()).field(key_text);
    h.field(std::to_string(pruned.size()));
    for (const auto& c : pruned) h.field(c.text());
    return detail::to_hex(h.digest());
  }
  [[nodiscard]] std::string result_file() const { return kernel_.name + ".autotune.json"; }

  // --- tuning ------------------------------------------------------------------------------------
  /// Single flight: the first caller of a key tunes it, the others await that tuning's shared result.
  /// (Each awaitable is built in a named variable first: see detail/run_on.hpp for the GCC 12 reason.)
  boost::asio::awaitable<entry*> ensure_tuned(tuning_key key, Args... args) {
    std::shared_ptr<flight> f;
    bool leader = false;
    {
      std::lock_guard lock(flights_mutex_);
      if (entry* e = table_.find(key)) co_return e;
      auto& slot = flights_[key];
      if (!slot) {
        slot = std::make_shared<flight>();
        leader = true;
      }
      f = slot;
    }
    if (!leader) {
      auto waiting = f->wait();
      co_return co_await std::move(waiting);
    }
    std::exception_ptr error;
    entry* result = nullptr;
    try {
      auto tuning = run_tuning(key, args...);
      result = co_await std::move(tuning);
    } catch (...) {
      error = std::current_exception();
    }
    {
      // Leave the table of flights first: a caller arriving after this finds the entry (or, after a
      // failure, starts a new tuning) instead of joining a finished flight.
      std::lock_guard lock(flights_mutex_);
      flights_.erase(key);
    }
    if (error) {
      f->set_exception(error);
      std::rethrow_exception(error);
    }
    f->set_value(result);
    co_return result;
  }

  binary_type compile_one(const config& c, const device_type& d, std::stop_token stop) const {
    ++compiles_;
    if constexpr (StoppableCompiler<B>) return backend_.compile(kernel_, c, d, stop);
    else return backend_.compile(kernel_, c, d);
  }

  /// Records a failure: the exception's type gives the status.
  static void record_failure(candidate_result& r, std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const compiler_crashed& x) {
      r.status = candidate_status::compiler_crashed;
      r.reason = x.what();
    } catch (const compile_error& x) {
      r.status = candidate_status::compile_error;
      r.reason = x.what();
    } catch (const out_of_resources& x) {
      r.status = candidate_status::out_of_resources;
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

  [[nodiscard]] bench_options bench_settings() const {
    bench_options o = opts_.bench.value_or(bench_options{knobs().bench.warmup_ms.get(), knobs().bench.rep_ms.get()});
    o.quantiles = {0.5, 0.2, 0.8};
    return o;
  }

  Bench& benchmarker(std::size_t d) {
    std::lock_guard lock(bench_mutex_);
    auto& b = benches_[d];
    if (!b) b = detail::make_benchmarker<Bench>(backend_, devices_[d]);
    return *b;
  }

  /// Everything one tuning job shares between its coroutine and the tasks on the pools.
  struct job {
    struct event {
      bool compiled = false; ///< else: a benchmark finished
      std::size_t index = 0, device = 0;
    };
    explicit job(std::size_t n) : binaries(n), loaded(n) {}
    detail::async_queue<event> events;
    std::vector<candidate_result> results;
    std::vector<std::optional<binary_type>> binaries;
    std::vector<std::optional<function_type>> loaded; ///< on the launch device
    std::stop_source stop;
  };

  boost::asio::awaitable<entry*> run_tuning(tuning_key key, Args... args) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const std::string key_txt = key_text(args...);
    std::vector<config> pruned = prune(args...);
    const std::size_t n = pruned.size();
    const std::size_t launch_dev = opts_.device;

    std::optional<Cache> cache;
    std::shared_ptr<void> lease; // held while this process tunes a key others may be waiting for
    if (cache_results()) {
      try {
        const std::string rkey = result_key(key_txt, pruned);
        cache.emplace(rkey);
        auto reading = read_result(*cache, pruned);
        if (auto stored = co_await std::move(reading)) {
          emit(cache_hit{kernel_.name, key_txt, "result"});
          auto finishing = finish_from_cache(key, std::move(*stored), pruned, start);
          co_return co_await std::move(finishing);
        }
        if constexpr (CoordinatingCache<Cache>) {
          // One tuning per key across processes: take the key's lease or wait for its holder's result.
          Cache* c = &*cache;
          const std::string file = result_file();
          std::function<bool()> ready = [c, file] {
            auto text = c->get(file);
            return text && tuning_result::from_json(*text).has_value();
          };
          auto coordinating = coordinate_tuning(*cache, rkey, ready);
          tuning_coordination coord = co_await std::move(coordinating);
          if (coord.result_ready) {
            auto rereading = read_result(*cache, pruned);
            if (auto stored = co_await std::move(rereading)) {
              emit(cache_hit{kernel_.name, key_txt, "result (tuned by another process)"});
              auto finishing = finish_from_cache(key, std::move(*stored), pruned, start);
              co_return co_await std::move(finishing);
            }
          }
          lease = std::move(coord.guard);
        }
      } catch (const cache_error& e) {
        emit(tuning_warning{kernel_.name, fmt::format("the tuning-result cache is unusable ({}); tuning without it",
                                                      e.what())});
        cache.reset();
      }
    }

    auto state = std::make_shared<job>(n);
    for (auto& c : pruned) state->results.push_back(candidate_result{c});

    // Devices measuring this job: the launch device, plus identical ones when arguments can be made for them.
    std::vector<std::size_t> devs{launch_dev};
    std::vector<std::optional<std::tuple<Args...>>> dev_args(devices_.size());
    if (opts_.args_for_device && n > 1) {
      for (std::size_t d = 0; d < devices_.size(); ++d)
        if (d != launch_dev && interchangeable(devices_[launch_dev], devices_[d])) {
          dev_args[d].emplace(opts_.args_for_device(d, args...));
          devs.push_back(d);
        }
    }
    emit(tuning_started{kernel_.name, key_txt, n, devs.size()});

    // Compile every candidate on the pool; each reports to the job's channel when done.
    for (std::size_t i = 0; i < n; ++i) {
      boost::asio::post(engine_->compile_executor(), [this, state, i, launch_dev] {
        auto& r = state->results[i];
        const auto t0 = clock::now();
        try {
          state->binaries[i] = compile_one(r.cfg, devices_[launch_dev], state->stop.get_token());
          if constexpr (ReportsBinaryCacheHit<B>) r.binary_from_cache = state->binaries[i]->from_cache;
        } catch (...) {
          record_failure(r, std::current_exception());
        }
        r.compile_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        state->events.push(typename job::event{true, i, 0});
      });
    }

    // Measure each compiled candidate on a free device, as soon as it is compiled (GPU backends) or
    // once all are compiled (the host backend, whose benchmarks would compete with compiles): a first
    // pass over every candidate, then the finals the measure strategy asks for (screening by default).
    const bench_options full = bench_settings();
    const screening_measure knob_screening = screening_measure::from_knobs();
    const measure_strategy& strategy = opts_.measure ? *opts_.measure : knob_screening;
    const bench_options first_pass = strategy.first_pass(full, n);
    std::vector<std::size_t> ready, idle(devs.rbegin(), devs.rend());
    std::size_t compiled = 0, finished = 0;
    std::tuple<Args...> own_args(args...);
    auto dispatch = [&](const bench_options& bopts) {
      std::sort(ready.begin(), ready.end(), std::greater<>()); // measure in config order
      while (!ready.empty() && !idle.empty()) {
        const std::size_t i = ready.back(), d = idle.back();
        ready.pop_back();
        idle.pop_back();
        std::tuple<Args...>* a = d == launch_dev ? &own_args : &*dev_args[d];
        boost::asio::post(engine_->device_executor(device_ids_[d]), [this, state, i, d, a, launch_dev, bopts, n] {
          auto& r = state->results[i];
          r.device = static_cast<int>(d);
          try {
            auto fn = backend_.load(*state->binaries[i], kernel_, r.cfg, devices_[d]);
            std::apply(
                [&](Args&... xs) {
                  const launch_grid g = opts_.grid ? opts_.grid(r.cfg, xs...) : launch_grid{};
                  std::vector<std::any> saved(arity);
                  if (n == 1) {
                    // One candidate: nothing to choose, so nothing to measure (as in Triton).
                    run_once(fn, r.cfg, g, saved, xs...);
                    r.time = {0.0, 0.0, 0.0};
                  } else {
                    auto t = benchmarker(d).bench([&] { run_once(fn, r.cfg, g, saved, xs...); }, bopts);
                    if (t.size() < 3) throw error("the benchmarker returned fewer than 3 quantiles");
                    r.time = {t[0], t[1], t[2]};
                  }
                },
                *a);
            r.status = candidate_status::ok;
            if (d == launch_dev) state->loaded[i].emplace(std::move(fn));
          } catch (...) {
            record_failure(r, std::current_exception());
          }
          state->events.push(typename job::event{false, i, d});
        });
      }
    };
    while (finished < n) {
      auto popping = state->events.pop();
      auto ev = co_await std::move(popping);
      if (ev.compiled) {
        ++compiled;
        auto& r = state->results[ev.index];
        if (!state->binaries[ev.index]) {
          ++finished;
          emit(candidate_failed{kernel_.name, key_txt, ev.index, n, &r});
        } else {
          emit(candidate_compiled{kernel_.name, key_txt, ev.index, n, &r.cfg, r.compile_ms, r.binary_from_cache});
          ready.push_back(ev.index);
        }
      } else {
        ++finished;
        idle.push_back(ev.device);
        const auto& r = state->results[ev.index];
        if (r.status == candidate_status::ok) emit(candidate_measured{kernel_.name, key_txt, ev.index, n, &r});
        else emit(candidate_failed{kernel_.name, key_txt, ev.index, n, &r});
      }
      if (detail::overlaps_compile<B>() || compiled == n) dispatch(first_pass);
    }
    if constexpr (ReportsUncachedBinary<B>) report_uncached(state->binaries);

    if (auto finalists = strategy.finalists(state->results, full); !finalists.empty()) {
      for (std::size_t i = 0; i < n; ++i)
        if (state->results[i].status == candidate_status::ok) state->results[i].screened_only = true;
      for (auto i : finalists) state->results[i].screened_only = false;
      ready = finalists;
      dispatch(full);
      for (std::size_t done = 0; done < finalists.size(); ++done) {
        auto popping = state->events.pop();
        auto ev = co_await std::move(popping);
        idle.push_back(ev.device);
        dispatch(full);
      }
    }

    tuning_result result;
    result.kernel = kernel_.name;
    result.key_text = key_txt;
    result.candidates = std::move(state->results);
    result.made = provenance::here(backend_.device_name(devices_[launch_dev]));
    auto best = select_best(result.candidates);
    if (!best) {
      std::string list;
      for (const auto& c : result.candidates)
        list += fmt::format("\n  {{{}}}: {}: {}", c.cfg.text(), to_string(c.status), c.reason.substr(0, 2000));
      throw autotuner_error(fmt::format("autotuner for '{}': every candidate failed for key ({}):{}", kernel_.name,
                                        key_txt, list));
    }
    result.winner = *best;
    result.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (cache) {
      try {
        const std::string json = result.json(), file = result_file();
        if constexpr (requires { cache->async_put(json, file); }) {
          auto putting = cache->async_put(json, file);
          co_await std::move(putting);
        } else {
          cache->put(json, file);
        }
      } catch (const std::exception& e) {
        emit(tuning_warning{kernel_.name, fmt::format("could not store the tuning result: {}", e.what())});
      }
    }
    lease.reset(); // the result is stored: waiters elsewhere can read it
    ++measured_;
    std::optional<function_type> fn = std::move(state->loaded[result.winner]);
    auto publishing = publish(key, std::move(result), std::move(fn));
    co_return co_await std::move(publishing);
  }

  /// One warning per tuning when the cache could not take some binaries (they ran from a private
  /// directory instead): the tuning is unharmed, but the next run will compile them again.
  void report_uncached(const std::vector<std::optional<binary_type>>& binaries) const {
    std::size_t uncached = 0, built = 0;
    std::string_view why;
    for (const auto& b : binaries) {
      if (!b) continue;
      ++built;
      if (!b->not_cached.empty()) {
        if (!uncached++) why = b->not_cached;
      }
    }
    if (uncached)
      emit(tuning_warning{kernel_.name, fmt::format("{} of {} compiled binaries could not be stored in the cache ({}); "
                                                    "they were loaded from a private temporary directory, and the "
                                                    "next run will compile them again",
                                                    uncached, built, why)});
  }

  /// A stored result for exactly these candidates, or nothing. Remote reads run off the engine's threads.
  boost::asio::awaitable<std::optional<tuning_result>> read_result(Cache& cache, const std::vector<config>& pruned) const {
    const std::string file = result_file();
    std::optional<std::string> text;
    if constexpr (requires { cache.async_get(file); }) {
      auto getting = cache.async_get(file);
      text = co_await std::move(getting);
    } else {
      text = cache.get(file);
    }
    if (!text) co_return std::nullopt;
    auto stored = tuning_result::from_json(*text);
    if (!stored || !matches(*stored, pruned)) co_return std::nullopt;
    co_return stored;
  }

  /// The key of device `d`'s thread: the physical device the backend names (so that every tuner on
  /// it shares one thread, whatever its template arguments), else its name and index.
  [[nodiscard]] std::string device_key(std::size_t d) const {
    if constexpr (HasDeviceKey<B>) return backend_.device_key(devices_[d]);
    else return fmt::format("{}#{}", backend_.device_name(devices_[d]), d);
  }

  /// Devices whose timings are comparable (same model, not only the same architecture): the
  /// backend's `interchangeable` if it has one, else equal fingerprints.
  bool interchangeable(const device_type& a, const device_type& b) const {
    if constexpr (ComparesDevices<B>) return backend_.interchangeable(a, b);
    else return backend_.fingerprint(a) == backend_.fingerprint(b);
  }

  /// The stored result is for exactly these candidates, in this order.
  static bool matches(const tuning_result& stored, const std::vector<config>& pruned) {
    if (stored.candidates.size() != pruned.size()) return false;
    for (std::size_t i = 0; i < pruned.size(); ++i)
      if (!(stored.candidates[i].cfg == pruned[i])) return false;
    return true;
  }

  /// A result-cache hit: compile only the winner (normally a binary-cache hit) and load it.
  boost::asio::awaitable<entry*> finish_from_cache(tuning_key key, tuning_result stored, std::vector<config>& pruned,
                                                    std::chrono::steady_clock::time_point start) {
    // The stored configs lack hook functions: use the user's equal configs.
    for (std::size_t i = 0; i < pruned.size(); ++i) stored.candidates[i].cfg = pruned[i];
    ++cached_;
    stored.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    auto publishing = publish(key, std::move(stored), std::nullopt);
    co_return co_await std::move(publishing);
  }

  /// Loads the winner on the launch device if needed, stores the entry, reports the selection.
  boost::asio::awaitable<entry*> publish(tuning_key key, tuning_result result, std::optional<function_type> fn) {
    auto shared = std::make_shared<tuning_result>(std::move(result));
    if (!fn) {
      const config& best = shared->best();
      const auto& dev = devices_[opts_.device];
      auto compiling = detail::run_on(engine_->compile_executor(), [&] { return compile_one(best, dev, {}); });
      auto bin = co_await std::move(compiling);
      auto loading = detail::run_on(engine_->device_executor(device_ids_[opts_.device]),
                                    [&] { return backend_.load(bin, kernel_, best, dev); });
      fn.emplace(co_await std::move(loading));
    }
    emit(tuning_selected{shared.get()});
    entry& e = table_.insert(key, entry{&shared->best(), std::move(*fn), shared});
    co_return &e;
  }

  boost::asio::awaitable<std::vector<candidate_result>> warmup_async(Args... args) {
    std::vector<config> pruned = prune(args...);
    std::vector<candidate_result> results;
    for (auto& c : pruned) results.push_back(candidate_result{c});
    auto remaining = std::make_shared<std::atomic<std::size_t>>(pruned.size());
    auto done = std::make_shared<detail::async_queue<bool>>();
    for (std::size_t i = 0; i < results.size(); ++i)
      boost::asio::post(engine_->compile_executor(), [this, &results, i, remaining, done] {
        auto& r = results[i];
        const auto t0 = std::chrono::steady_clock::now();
        try {
          auto bin = compile_one(r.cfg, devices_[opts_.device], {});
          if constexpr (ReportsBinaryCacheHit<B>) r.binary_from_cache = bin.from_cache;
          r.status = candidate_status::ok;
          r.time = {inf_ms, inf_ms, inf_ms};
        } catch (...) {
          record_failure(r, std::current_exception());
        }
        r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (--*remaining == 0) done->push(true);
      });
    if (!results.empty()) {
      auto popping = done->pop();
      co_await std::move(popping);
    }
    co_return results;
  }

  kernel_source kernel_;
  std::vector<config> configs_;
  options opts_;
  B backend_;
  engine* engine_;
  std::vector<device_type> devices_;
  std::vector<std::string> device_ids_;
  std::vector<bool> is_key_, is_reset_, is_restore_;
  std::array<const std::type_info*, arity> types_{};

  detail::read_mostly_map<tuning_key, entry> table_;
  std::mutex flights_mutex_;
  std::unordered_map<tuning_key, std::shared_ptr<flight>, detail::tuning_key_hasher> flights_;
  std::mutex bench_mutex_;
  std::unordered_map<std::size_t, std::unique_ptr<Bench>> benches_;
  mutable std::atomic<std::size_t> measured_{0}, cached_{0}, compiles_{0};
};

} // namespace cotune
