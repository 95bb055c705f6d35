#pragma once
/// \file `cotune::tuning_job`: the tuning of one key. It reads the result cache (and, with a
/// coordinating cache, takes the key's lease or waits for another process's result), prunes,
/// compiles every candidate on the compile pool, measures each on a free device thread as the
/// measure strategy says, selects the winner, stores the result and loads the winner on the launch
/// device. The autotuner runs one job per new key and keeps what it hands back.
///
/// The job is one class, read top to bottom: `run` (caches, lease, shipped winner), `measure` (the
/// pipeline's first pass, then the finals), `finish`. It is written over `tuning_core` and knows
/// nothing of the kernel's argument types: the autotuner gives it the key's text and the pruned
/// candidates (computed once, from one walk of the first call's arguments), and a `kernel_call`
/// (tune/kernel_call.hpp) for the four steps that need the arguments themselves. So its coroutines,
/// the bulk of a tuner's code, are compiled once per backend, benchmarker and cache.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/async_queue.hpp>
#include <cotune/detail/run_on.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/detail/backend_traits.hpp>
#include <cotune/tune/detail/background_pacing.hpp>
#include <cotune/tune/binary_cache.hpp>
#include <cotune/tune/detail/candidate_pipeline.hpp>
#include <cotune/tune/coordination.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/detail/isolated_measure.hpp>
#include <cotune/tune/detail/kernel_call.hpp>
#include <cotune/tune/measure_strategy.hpp>
#include <cotune/tune/process_setup.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/detail/tuning_recovery.hpp>
#include <cotune/tune/detail/result_store.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/detail/tuning_timeline.hpp>
#include <cotune/tune/winner_source.hpp>

namespace cotune {

/// One key's tuning over a tuner's core, made as a shared object (the tasks it posts hold it) by the
/// autotuner for the key's first caller. Every co_await awaits a named awaitable (see
/// detail/run_on.hpp for the GCC 12 reason).
template <Backend B, class Bench, CacheManager Cache>
class tuning_job final : public std::enable_shared_from_this<tuning_job<B, Bench, Cache>> {
public:
  using core = tuning_core<B, Bench, Cache>;
  using function_type = typename B::function;
  using binary_entry = cached_binary<typename B::binary>;

  /// What a finished job hands back: the result and its winner, loaded on the launch device.
  struct outcome {
    std::shared_ptr<const tuning_result> result;
    function_type fn;
  };

  /// The tuning of the key `key_text` over the candidates `pruned` (the tuner's, pruned for this call's
  /// arguments), with `call` for what needs the arguments.
  /// `seeds`: candidates to evaluate first (the winners of the nearest tuned keys, best first): a
  /// budgeted search proposes them before its own choices, an exhaustive one measures them first.
  tuning_job(core& ctx, std::string key_text, std::vector<config> pruned, std::unique_ptr<kernel_call<B>> call,
             std::vector<std::size_t> seeds = {})
      : ctx_(ctx), key_text_(std::move(key_text)), pruned_(std::move(pruned)), call_(std::move(call)),
        recovery_(ctx.kernel.name), seeds_(std::move(seeds)) {
    detail::ensure_process_setup<B>();
  }
  tuning_job(const tuning_job&) = delete;
  tuning_job& operator=(const tuning_job&) = delete;

  /// Tunes the key (or takes its result from a cache, another process or a shipped database). Its
  /// coroutines and larger members are defined below the class, not in it, so that
  /// COTUNE_SEPARATE_COMPILATION can compile the host backend's job once (an explicit instantiation;
  /// an inline member would be compiled again in every file that calls it; the two small ones in the
  /// class are called only by those below it).
  boost::asio::awaitable<outcome> run();

  /// Makes this a background tuning (first_call_mode::serve), before run(): its measurements keep
  /// within `share` of each device's time (tune/detail/background_pacing.hpp), a candidate whose
  /// samples were noisy is measured again (at most detail::background_retries times), and noisy finals
  /// are run again once, so that a winner is not chosen from samples the program's work disturbed.
  void in_background(double share) { background_share_ = share; }

private:
  using shared_state = tuning_state<B>;

  /// A config as this backend sees it (no launch options where it has none).
  [[nodiscard]] static std::string shown(const config& c) {
    return detail::uses_launch_options<B>() ? c.text() : c.params_text();
  }

  using clock = std::chrono::steady_clock;

  /// A winner shipped with the application (a tuning database, tune/winner_source.hpp) for this key,
  /// device and candidates, reported as a cache hit; nothing (after a warning, if the source failed).
  std::optional<tuning_result> shipped_winner() const;

  /// The first pass over what the search proposes (tune/candidate_pipeline.hpp: compiled on the pool,
  /// measured on free devices), then the finals the measure strategy asks for (screening by default).
  boost::asio::awaitable<std::shared_ptr<shared_state>> measure();

  using pipeline_type = candidate_pipeline<core, shared_state>;

  /// The candidates whose outcome is known before measuring: resumed from an interrupted run's journal,
  /// or quarantined for this kernel (they crashed or hung before). Sets their results; returns them.
  [[nodiscard]] std::vector<std::size_t> take_known(shared_state& state) const;

  /// The devices that measure: the launch device first, then identical ones when the options can make
  /// arguments for them (add_device).
  [[nodiscard]] std::vector<std::size_t> measuring_devices();

  /// The finals the measure strategy asks for after the first pass: interleaved rounds on the launch
  /// device (fair: drift favours no one), or each finalist again on a free device when isolated or
  /// when fewer than two can run. Awaited at once: `strategy` and `pipeline` are the caller's.
  boost::asio::awaitable<void> run_finals(std::shared_ptr<shared_state> state, const measure_strategy& strategy,
                                          bench_options full, pipeline_type& pipeline);

  /// Runs `work` on device `d`'s thread: at once for a blocking tuning, when the device's share allows
  /// for a background one (detail::run_paced).
  void on_device(std::size_t d, std::function<void()> work) {
    if (background_share_ <= 0) {
      work();
      return;
    }
    const std::string& id = ctx_.device_ids[d];
    detail::run_paced(detail::device_share::of(id), background_share_, ctx_.eng.device_executor(id),
                      ctx_.eng.coordinator(), pacing_, std::move(work));
  }

  /// A background tuning: waits until device `d`'s share allows a measurement (without holding its thread).
  boost::asio::awaitable<void> wait_for_share(std::size_t d);

  /// A background tuning: measures again (with `o`) the candidates of the first pass whose samples were
  /// noisy, keeping each one's steadier measurement, at most detail::background_retries times.
  /// Awaited at once, as the pipeline's run() is.
  boost::asio::awaitable<void> remeasure_noisy(shared_state& state, pipeline_type& pipeline, bench_options o);

  /// Reports candidate `i` (of `n`): compiled, or its outcome (also journaled).
  void report(const std::vector<candidate_result>& results, std::size_t i, std::size_t n, bool compiled) {
    const auto& r = results[i];
    if (compiled) {
      ctx_.emit(candidate_compiled{ctx_.kernel.name, key_text_, i, n, &r.cfg, r.compile_ms, r.binary_from_cache});
      return;
    }
    if (r.status == candidate_status::ok) ctx_.emit(candidate_measured{ctx_.kernel.name, key_text_, i, n, &r});
    else ctx_.emit(candidate_failed{ctx_.kernel.name, key_text_, i, n, &r});
    warn(recovery_.journal(results, i));
  }

  /// On device `d`'s thread: loads candidate `i` there and times it (one candidate: runs it once).
  /// `isolate`: in a forked copy of the process or the backend's worker (tune/isolated_measure.hpp),
  /// where a crash or a hang costs this candidate alone; a forked copy's writes do not come back.
  /// `next`: the candidate likely measured next on `d` (the pipeline's guess), which the isolated copy
  /// starts as soon as it is done with `i`.
  void measure_one(shared_state& state, std::size_t i, std::size_t d, std::size_t launch_dev, const bench_options& bopts,
                   std::size_t n, bool isolate, std::optional<std::size_t> next = std::nullopt);

  /// On device `d`'s thread, before interleaved finals there: loads each finalist not loaded there yet
  /// (measured on another device in the first pass), so that on_load runs on it first; one that fails
  /// to load or set up is recorded as failed and left out. Returns the rest.
  [[nodiscard]] std::vector<std::size_t> load_finalists(shared_state& state, const std::vector<std::size_t>& finalists,
                                                        std::size_t d) const;

  /// Reads what an interrupted run left (this key's journal, this kernel's quarantine) and decides
  /// whether candidates are measured in isolation. Journaling goes on into `cache`.
  void recall(Cache& cache);

  /// Emits `warning`, if there is one (the recovery state's failures).
  void warn(std::optional<std::string> warning) const {
    if (warning) ctx_.emit(tuning_warning{ctx_.kernel.name, *std::move(warning)});
  }

  /// COTUNE_ISOLATE: `on`, or `auto` when `crashed_before` (an interrupted run, a quarantine), where
  /// the backend can and the options allow (else a warning says why not).
  void decide_isolation(bool crashed_before);

  /// A stored result for exactly these candidates, or nothing.
  boost::asio::awaitable<std::optional<tuning_result>> read_result(Cache& cache) const;

  /// Stores the result; a failure is a warning (the tuning itself succeeded).
  boost::asio::awaitable<void> store_result(Cache& cache, const tuning_result& result) const;

  /// A result-cache hit: only the winner is compiled (normally a binary-cache hit) and loaded.
  boost::asio::awaitable<outcome> finish_from_cache(tuning_result stored);

  /// Loads the winner on the launch device if the measurement did not, and reports the selection.
  boost::asio::awaitable<outcome> finish(tuning_result result, std::optional<function_type> fn);

  /// Candidate `i` loaded and timed in the tuning's isolated copy (fork isolation: the host), which
  /// is forked at the first call and ended once the tuning has measured.
  measurement measure_in_fork(shared_state& state, std::size_t i, std::size_t d, const bench_options& o,
                              std::size_t n, std::optional<std::size_t> next);

  /// What the fork measurer's copy runs (`context` is this job's fork_context, as copied).
  static std::optional<std::vector<double>> measure_forked(const void* context, std::size_t index,
                                                           const bench_options& o);
  /// One round of the finals as the fork measurer's copy runs it: the same fair finals as in-process,
  /// on its own copy; the round's samples and failures (`detail::encode_round`).
  static std::optional<std::string> finals_forked(const void* context, const std::vector<std::size_t>& finalists,
                                                  const bench_options& full, const detail::finals_round& round);
  /// The finals of `finalists` in the tuning's isolated copy, going on from `progress`, a job per round
  /// (on the launch device's thread), `after_round` called after each; the outcomes are then recorded.
  /// False, with `why`, when a round did not end there.
  bool finals_in_fork(shared_state& state, const std::vector<std::size_t>& finalists, std::size_t d,
                      const bench_options& full, finals_progress& progress,
                      const std::function<void(const finals_progress&)>& after_round, std::string& why);
  /// Marks in `progress` (aligned with `finalists`) the finalists that `load_finalists` left out of
  /// `loaded`, with the failure it recorded.
  static void unloaded_fail(shared_state& state, const std::vector<std::size_t>& finalists,
                            const std::vector<std::size_t>& loaded, finals_progress& progress);

  /// What a forked copy of this process needs to measure a candidate.
  struct fork_context {
    tuning_job* job = nullptr;
    shared_state* state = nullptr;
    std::size_t device = 0, candidates = 0;
  };

  core& ctx_;
  clock::time_point start_{};
  const std::string key_text_;
  const std::vector<config> pruned_;
  const std::unique_ptr<kernel_call<B>> call_; ///< the first caller's arguments
  tuning_recovery<Cache> recovery_; ///< the journal and the quarantine
  bool isolate_ = false, warned_isolation_ = false;
  fork_context fork_context_{};
  std::unique_ptr<detail::fork_measurer> fork_measurer_; ///< while a fork-isolated tuning measures
  const tuning_timeline* timeline_ = nullptr; ///< the measured tuning's, from its end to its report
  const std::vector<std::size_t> seeds_;       ///< evaluated first (transfer from tuned neighbours)
  double background_share_ = 0;                ///< in_background's share; 0: a blocking tuning
  std::shared_ptr<detail::pacing_counts> pacing_ = std::make_shared<detail::pacing_counts>();
  std::size_t remeasured_ = 0, final_repeats_ = 0;
  std::size_t final_rounds_resumed_ = 0; ///< rounds of the finals taken from an interrupted run's journal
  double first_pass_spread_ = 0; ///< the first pass's median spread, the finals' reference
};

template <Backend B, class Bench, CacheManager Cache>
measurement tuning_job<B, Bench, Cache>::measure_in_fork(shared_state& state, std::size_t i, std::size_t d,
                                                         const bench_options& o, std::size_t n,
                                                         std::optional<std::size_t> next) {
  if (!fork_measurer_) {
    fork_context_ = fork_context{this, &state, d, n};
    fork_measurer_ = std::make_unique<detail::fork_measurer>(&measure_forked, &fork_context_, &finals_forked);
  }
  return measurement_of_values(fork_measurer_->measure(i, o, ctx_.kernel.name, shown(state.results[i].cfg), next));
}

template <Backend B, class Bench, CacheManager Cache>
std::optional<std::string>
tuning_job<B, Bench, Cache>::finals_forked(const void* context, const std::vector<std::size_t>& finalists,
                                           const bench_options& full, const detail::finals_round& round) {
  const auto& c = *static_cast<const fork_context*>(context);
  auto& state = *c.state;
  for (auto i : finalists)
    if (i >= state.binaries.size() || !state.binaries[i]) return std::nullopt; // compiled after the fork
  // The copy's results are as they were at the fork; a finalist passed its screening (ok) since.
  for (auto i : finalists) {
    state.results[i].status = candidate_status::ok;
    state.results[i].reason.clear();
  }
  finals_progress progress(finalists.size());
  progress.rounds_done = round.round;
  // on_load, in the copy (once: the copy keeps its finalists loaded from one round's job to the next)
  unloaded_fail(state, finalists, c.job->load_finalists(state, finalists, c.device), progress);
  c.job->call_->measure_finals(state, finalists, c.device, full, progress,
                               rounds_plan{.last = round.round + 1, .cold = round.cold, .settle_ms = round.settle_ms});
  return detail::encode_round(progress);
}

template <Backend B, class Bench, CacheManager Cache>
bool tuning_job<B, Bench, Cache>::finals_in_fork(shared_state& state, const std::vector<std::size_t>& finalists,
                                                 std::size_t d, const bench_options& full, finals_progress& progress,
                                                 const std::function<void(const finals_progress&)>& after_round,
                                                 std::string& why) {
  if (!fork_measurer_) {
    fork_context_ = fork_context{this, &state, d, state.results.size()};
    fork_measurer_ = std::make_unique<detail::fork_measurer>(&measure_forked, &fork_context_, &finals_forked);
  }
  const double settle_ms = knobs().bench.settle_ms.get();
  for (bool first = true; progress.rounds_done < final_rounds; first = false) {
    // A job per round, of the finalists still in: the journal records each round as it ends.
    std::vector<std::size_t> alive, at;
    for (std::size_t k = 0; k < finalists.size(); ++k)
      if (!progress.failures[k]) alive.push_back(finalists[k]), at.push_back(k);
    if (alive.empty()) break;
    // Its bound: each finalist's first run within the bench timeout and the rest of its round within
    // four times its budget, the settling twice over, and a second more.
    const double warmup = first ? full.warmup_ms : full.warmup_ms / static_cast<double>(final_rounds);
    const double per_finalist = static_cast<double>(std::max<std::int64_t>(1, knobs().bench.timeout_ms.get())) +
                                4 * (warmup + full.rep_ms / static_cast<double>(final_rounds));
    const auto limit = std::chrono::milliseconds(static_cast<std::int64_t>(
        per_finalist * static_cast<double>(alive.size()) + (first ? 2 * settle_ms : 0.0) + 1000));
    const detail::finals_round round{progress.rounds_done, first, first ? settle_ms : 0.0};
    auto reply = fork_measurer_->finals(alive, full, round, limit, why);
    if (!reply) return false;
    if (!detail::decode_round(*reply, at, progress)) {
      why = "the isolated copy sent a malformed round of the finals";
      return false;
    }
    ++progress.rounds_done;
    if (after_round) after_round(progress);
  }
  record_finals(state.results, finalists, progress, d);
  return true;
}

template <Backend B, class Bench, CacheManager Cache>
void tuning_job<B, Bench, Cache>::unloaded_fail(shared_state& state, const std::vector<std::size_t>& finalists,
                                                const std::vector<std::size_t>& loaded, finals_progress& progress) {
  progress.failures.resize(finalists.size());
  progress.samples.resize(finalists.size());
  for (std::size_t k = 0; k < finalists.size(); ++k)
    if (!progress.failures[k] && std::find(loaded.begin(), loaded.end(), finalists[k]) == loaded.end())
      progress.failures[k] = final_failure{state.results[finalists[k]].status, state.results[finalists[k]].reason};
}

template <Backend B, class Bench, CacheManager Cache>
std::optional<std::vector<double>> tuning_job<B, Bench, Cache>::measure_forked(const void* context, std::size_t index,
                                                                               const bench_options& o) {
  const auto& c = *static_cast<const fork_context*>(context);
  auto& state = *c.state;
  if (index >= state.binaries.size() || !state.binaries[index]) return std::nullopt; // compiled after the fork
  const config& cfg = state.results[index].cfg;
  auto fn = c.job->call_->load(*state.binaries[index], cfg, c.device); // runs on_load, in the copy
  auto values = as_values(c.job->call_->time(*state.binaries[index], fn, cfg, c.device, o, c.candidates, false));
  // Kept loaded in the copy (its own `loaded`, never read back), as in-process measuring keeps it: an
  // unload per candidate (dlclose, unmapping) is work the in-process path does not do while it measures.
  state.loaded[index].emplace(std::move(fn));
  return values;
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::run() -> boost::asio::awaitable<outcome> {
  start_ = clock::now();
  knob_registry::instance().check(); // one error naming every bad setting, before any candidate runs
  decide_isolation(false); // `on` applies without a cache; recall() decides again with one

  std::optional<Cache> cache;
  std::shared_ptr<void> lease; // held while this process tunes a key others may be waiting for
  bool shipped_tried = false;
  if (ctx_.cache_results()) {
    try {
      const std::string rkey = ctx_.result_key(key_text_, pruned_);
      cache.emplace(rkey);
      auto reading = read_result(*cache);
      if (auto stored = co_await std::move(reading)) {
        ctx_.emit(cache_hit{ctx_.kernel.name, key_text_, "result"});
        auto finishing = finish_from_cache(std::move(*stored));
        co_return co_await std::move(finishing);
      }
      // A result measured here wins over a shipped one; without it, a shipped winner saves the tuning.
      shipped_tried = true;
      if (auto shipped = shipped_winner()) {
        auto finishing = finish_from_cache(*std::move(shipped));
        co_return co_await std::move(finishing);
      }
      if constexpr (CoordinatingCache<Cache>) {
        // One tuning per key across processes: take the key's lease or wait for its holder's result.
        Cache* c = &*cache;
        const std::string file = ctx_.result_file();
        std::function<bool()> ready = [c, file] {
          auto text = c->get(file);
          return text && tuning_result::from_json(*text).has_value();
        };
        auto coordinating = coordinate_tuning(*cache, rkey, ready);
        tuning_coordination coord = co_await std::move(coordinating);
        if (coord.result_ready) {
          auto rereading = read_result(*cache);
          if (auto stored = co_await std::move(rereading)) {
            ctx_.emit(cache_hit{ctx_.kernel.name, key_text_, "result (tuned by another process)"});
            auto finishing = finish_from_cache(std::move(*stored));
            co_return co_await std::move(finishing);
          }
        }
        lease = std::move(coord.guard);
      }
    } catch (const cache_error& e) {
      ctx_.emit(tuning_warning{ctx_.kernel.name,
                               fmt::format("the tuning-result cache is unusable ({}); tuning without it", e.what())});
      cache.reset();
    }
  }

  if (!shipped_tried)
    if (auto shipped = shipped_winner()) {
      auto finishing = finish_from_cache(*std::move(shipped));
      co_return co_await std::move(finishing);
    }
  if (cache) recall(*cache);
  auto measuring = measure();
  auto state = co_await std::move(measuring);
  warn(recovery_.remember_crashes(state->results));
  background_measurement background;
  if (background_share_ > 0)
    background = {background_share_, pacing_->pauses.load(),
                  static_cast<double>(pacing_->paused_us.load()) / 1000.0, remeasured_, final_repeats_};

  tuning_result result;
  result.kernel = ctx_.kernel.name;
  result.key_text = key_text_;
  result.candidates = std::move(state->results);
  result.launch_options = detail::uses_launch_options<B>();
  result.final_rounds_resumed = final_rounds_resumed_;
  result.made = provenance::here(ctx_.backend.device_name(ctx_.devices[ctx_.settings.device]));
  auto best = select_best(result.candidates);
  if (!best) {
    std::string list;
    for (const auto& c : result.candidates)
      list += fmt::format("\n  {{{}}}: {}: {}", result.shown(c.cfg), to_string(c.status), c.reason.substr(0, 2000));
    throw autotuner_error(fmt::format("autotuner for '{}': every candidate failed for key ({}):{}", ctx_.kernel.name,
                                      key_text_, list));
  }
  result.winner = *best;
  const auto end = clock::now();
  result.wall_ms = std::chrono::duration<double, std::milli>(end - start_).count();
  result.phases = state->timeline.close(start_, end, ctx_.eng.compile_threads());
  result.background = background;
  timeline_ = &state->timeline; // lives until finish() has reported it
  if (cache) {
    auto storing = store_result(*cache, result);
    co_await std::move(storing);
    // The journal has served: a shared store that evicts nothing (Redis) does not keep it for ever.
    if constexpr (requires(Cache & c, std::vector<std::string> names) { c.async_forget_remote(std::move(names)); }) {
      auto forgetting = cache->async_forget_remote(tuning_journal::files(ctx_.kernel.name));
      (void)co_await std::move(forgetting);
    }
  }
  lease.reset(); // the result is stored: waiters elsewhere can read it
  ++ctx_.measured;
  std::optional<function_type> fn = std::move(state->loaded[result.winner]);
  if (!fn && state->binaries[result.winner]) { // measured in an isolated copy: its binary is loaded here
    const auto& bin = *state->binaries[result.winner];
    const config& cfg = result.candidates[result.winner].cfg;
    const std::size_t d = ctx_.settings.device;
    auto loading =
        detail::run_on(ctx_.eng.device_executor(ctx_.device_ids[d]), [&] { return call_->load(bin, cfg, d); });
    fn.emplace(co_await std::move(loading));
  }
  auto finishing = finish(std::move(result), std::move(fn));
  co_return co_await std::move(finishing);
}

template <Backend B, class Bench, CacheManager Cache>
std::optional<tuning_result> tuning_job<B, Bench, Cache>::shipped_winner() const {
  const auto& source = shipped_winner_source();
  if (!source) return std::nullopt;
  std::optional<tuning_result> shipped;
  try {
    shipped = source(ctx_.kernel.name, key_text_, ctx_.backend.device_name(ctx_.devices[ctx_.settings.device]), pruned_);
  } catch (const std::exception& e) {
    ctx_.emit(tuning_warning{ctx_.kernel.name, fmt::format("the shipped tuning database is unusable ({}); tuning "
                                                           "instead",
                                                           e.what())});
  }
  if (shipped) ctx_.emit(cache_hit{ctx_.kernel.name, key_text_, "shipped tuning database"});
  return shipped;
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::measure() -> boost::asio::awaitable<std::shared_ptr<shared_state>> {
  const std::size_t n = pruned_.size();
  const std::size_t launch_dev = ctx_.settings.device;
  auto state = std::make_shared<shared_state>(n);
  for (auto& c : pruned_) state->results.push_back(candidate_result{c});
  const std::vector<std::size_t> skipped = take_known(*state);
  const std::vector<std::size_t> devs = measuring_devices();
  ctx_.emit(tuning_started{ctx_.kernel.name, key_text_, n, devs.size()});

  // The search proposes batches; the pipeline compiles each on the pool and measures it on the
  // devices. Exhaustive search without a budget proposes every candidate in one batch: the tuning it
  // always was.
  const auto search = ctx_.search();
  const search_settings budget = ctx_.search_budget();
  const bool whole = search->evaluates_all() && !budget.limited();
  const search_space space = whole ? search_space({}) : search_space(pruned_, ctx_.settings.kinds);
  const std::size_t depth = detail::overlaps_compile<B>() ? 2 : 1; // the host measures once a batch is compiled
  // A batch: one per compile thread or two per device, whichever is more, so that both stay busy.
  const std::size_t batch = whole ? n : std::max<std::size_t>(ctx_.eng.compile_threads(), 2 * devs.size());
  std::unique_ptr<search_session> session;
  if (!whole) {
    session = search->start(space, budget, depth);
    for (auto i : skipped) session->known({i, state->results[i].time[0], state->results[i].status == candidate_status::ok});
    session->seed(seeds_);
  }
  const bench_options full = ctx_.bench_settings();
  const screening_measure knob_screening = screening_measure::from_knobs();
  const measure_strategy& strategy = ctx_.settings.measure ? *ctx_.settings.measure : knob_screening;
  const bench_options first_pass_options = strategy.first_pass(full, n);
  state->timeline.first_pass(first_pass_options.rep_ms != full.rep_ms);
  for (auto i : skipped) {
    const auto& r = state->results[i];
    if (r.status == candidate_status::ok) ctx_.emit(candidate_measured{ctx_.kernel.name, key_text_, i, n, &r});
    else ctx_.emit(candidate_failed{ctx_.kernel.name, key_text_, i, n, &r});
  }
  auto self = this->shared_from_this(); // the tasks hold the job: its arguments outlive them
  pipeline_type pipeline(
      ctx_, state, devs, launch_dev, detail::overlaps_compile<B>(),
      [self, state, launch_dev, n, isolate = isolate_](std::size_t i, std::size_t d, const bench_options& o,
                                                       std::optional<std::size_t> next) {
        // A paced (background) tuning sends no candidate ahead: the isolated copy would measure it
        // during the pause that leaves the device to the program.
        const auto ahead = self->background_share_ > 0 ? std::nullopt : next;
        self->on_device(d, [self, state, i, d, launch_dev, o, n, isolate, ahead] {
          self->measure_one(*state, i, d, launch_dev, o, n, isolate, ahead);
        });
      },
      [this, state, n](std::size_t i, bool compiled) { report(state->results, i, n, compiled); });
  for (auto i : skipped) pipeline.skip(i);
  if (whole) pipeline.measure_first(seeds_);
  auto first_pass = pipeline.run(session.get(), batch, depth, first_pass_options);
  co_await std::move(first_pass);
  for (std::size_t i = 0; i < n; ++i)
    if (!pipeline.proposed(i)) {
      auto& r = state->results[i];
      r.status = candidate_status::not_evaluated;
      r.reason = fmt::format("the {} search evaluated {} of {} candidates (its budget: tune_options::search_budget "
                             "or COTUNE_SEARCH_BUDGET / COTUNE_SEARCH_TIME_MS) and did not propose this one",
                             search->name(), pipeline.proposed(), n);
    }
  warn(uncached_warning(state->binaries)); // once per tuning
  if constexpr (ReportsWarnings<B>)
    for (auto& w : ctx_.backend.take_warnings()) ctx_.emit(tuning_warning{ctx_.kernel.name, std::move(w)});

  if (background_share_ > 0 && n > 1) {
    auto again = remeasure_noisy(*state, pipeline, first_pass_options);
    co_await std::move(again);
  }
  first_pass_spread_ = detail::median_spread(state->results);
  auto finals = run_finals(state, strategy, full, pipeline);
  co_await std::move(finals);
  fork_measurer_.reset(); // the isolated copy's work is done: end it
  co_return state;
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::run_finals(std::shared_ptr<shared_state> state, const measure_strategy& strategy,
                                             bench_options full, pipeline_type& pipeline)
    -> boost::asio::awaitable<void> {
  auto finalists = strategy.finalists(state->results, full);
  if (finalists.empty()) co_return;
  state->timeline.finals();
  for (std::size_t i = 0; i < state->results.size(); ++i)
    if (state->results[i].status == candidate_status::ok) state->results[i].screened_only = true;
  for (auto i : finalists) {
    state->results[i].screened_only = false;
    state->results[i].screen_ms = state->results[i].time[0]; // the finals replace `time`; tables show both
  }
  // A run killed after its finals (before its result was stored) journaled them: nothing is measured again.
  if (auto finals = recovery_.resumed_finals(finalists)) {
    for (std::size_t k = 0; k < finalists.size(); ++k) {
      auto& r = state->results[finalists[k]];
      const config cfg = r.cfg; // the user's config, with its hooks
      r = (*finals)[k];
      r.cfg = cfg;
      r.resumed = true;
    }
    co_return;
  }
  // A finalist taken from the journal has no binary yet (normally a binary-cache hit).
  std::vector<std::size_t> runnable;
  for (auto i : finalists) {
    if (!state->binaries[i]) {
      std::exception_ptr failure;
      try {
        const auto& dev = ctx_.devices[ctx_.settings.device];
        auto compiling = detail::run_on(ctx_.eng.compile_executor(), [&] { return ctx_.compile(pruned_[i], dev, {}); });
        state->binaries[i] = co_await std::move(compiling);
      } catch (...) {
        failure = std::current_exception();
      }
      if (failure) {
        detail::record_failure(state->results[i], failure);
        continue;
      }
    }
    runnable.push_back(i);
  }
  finalists = std::move(runnable);
  // A run killed during the finals journaled the rounds it completed: only the others are measured.
  finals_progress progress(finalists.size());
  if (auto resumed = finalists.size() >= 2 ? recovery_.resumed_rounds(finalists, final_rounds) : std::nullopt) {
    progress = *std::move(resumed);
    final_rounds_resumed_ = progress.rounds_done;
  }
  std::vector<std::string> round_warnings; // journal failures, emitted here rather than on the device's thread
  auto journal_rounds = [this, state, &finalists, &round_warnings](const finals_progress& p) {
    if (auto w = recovery_.journal_round(state->results, finalists, p, final_rounds)) round_warnings.push_back(*w);
  };
  // Fair finals: interleaved rounds on the launch device. An isolated tuning on a forked copy (the host)
  // runs them there too, a job per round: a finalist that crashes or hangs only now and then (past its
  // screening) then costs itself, not the program. If a round's job does not end, each finalist is
  // measured on its own in the copy, so that the one at fault is recorded `crashed` or `hung`.
  if (finalists.size() >= 2 && isolate_ && detail::fork_isolation<B>()) {
    const std::size_t dev = ctx_.settings.device;
    std::string why;
    bool done = false;
    auto finals = detail::run_on(ctx_.eng.device_executor(ctx_.device_ids[dev]), [&] {
      tuning_timeline::scope span(state->timeline, trace_span::several, trace_phase::final, ctx_.device_ids[dev], {},
                                  fmt::format("{} finalists, isolated", finalists.size()));
      done = finals_in_fork(*state, finalists, dev, full, progress, journal_rounds, why);
    });
    co_await std::move(finals);
    for (auto& w : round_warnings) warn(std::move(w));
    if (!done) {
      final_rounds_resumed_ = 0; // measured again, each on its own
      warn(fmt::format("the finals of {} finalists did not end in the isolated copy ({}); each is measured on its "
                       "own there instead, not in interleaved rounds",
                       finalists.size(), why));
      auto again = pipeline.remeasure(finalists, full);
      co_await std::move(again);
    }
  } else if (finalists.size() >= 2) {
    // A background tuning runs them back to back when the device's share allows it, and once more
    // when the program's work disturbed them (keeping the steadier run).
    const std::size_t dev = ctx_.settings.device;
    std::vector<candidate_result> previous;
    for (std::size_t attempt = 0;; ++attempt) {
      if (background_share_ > 0) {
        auto waiting = wait_for_share(dev);
        co_await std::move(waiting);
      }
      if (attempt > 0) progress = finals_progress(finalists.size()); // measured again whole, not journaled
      auto finals = detail::run_on(ctx_.eng.device_executor(ctx_.device_ids[dev]), [&] {
        const auto started = detail::device_share::clock::now();
        tuning_timeline::scope span(state->timeline, trace_span::several, trace_phase::final, ctx_.device_ids[dev], {},
                                    fmt::format("{} finalists", finalists.size()));
        if (progress.rounds_done < final_rounds) {
          unloaded_fail(*state, finalists, load_finalists(*state, finalists, dev), progress); // on_load runs first
          rounds_plan plan{.settle_ms = knobs().bench.settle_ms.get()};
          if (attempt == 0) plan.after_round = journal_rounds;
          call_->measure_finals(*state, finalists, dev, full, progress, plan);
        }
        record_finals(state->results, finalists, progress, dev);
        if (background_share_ > 0)
          detail::device_share::of(ctx_.device_ids[dev]).busy(started, detail::device_share::clock::now(),
                                                              background_share_);
      });
      co_await std::move(finals);
      for (auto& w : round_warnings) warn(std::move(w));
      round_warnings.clear();
      const bool noisy = background_share_ > 0 && detail::noisy_finals(state->results, finalists, first_pass_spread_);
      if (!previous.empty()) {
        // The steadier of the two runs: the one whose noisiest finalist was the less noisy.
        const auto worst = [&](const std::vector<candidate_result>& rs) {
          double w = 0;
          for (auto i : finalists)
            if (rs[i].status == candidate_status::ok) w = std::max(w, detail::measured_spread(rs[i]));
          return w;
        };
        if (worst(previous) < worst(state->results))
          for (auto i : finalists) state->results[i] = previous[i];
        else
          final_rounds_resumed_ = 0; // the second run's finals, measured whole, replaced the resumed ones
      }
      if (!noisy || attempt == detail::background_final_repeats) break;
      previous = state->results;
      ++final_repeats_;
      remeasured_ += finalists.size();
    }
  } else {
    auto again = pipeline.remeasure(finalists, full);
    co_await std::move(again);
  }
  warn(recovery_.journal_finals(state->results, finalists));
}

template <Backend B, class Bench, CacheManager Cache>
std::vector<std::size_t> tuning_job<B, Bench, Cache>::take_known(shared_state& state) const {
  // Candidates an interrupted run already measured, and those quarantined for this kernel, are not
  // compiled or measured again.
  std::vector<std::size_t> skipped;
  for (std::size_t i = 0; i < pruned_.size(); ++i) {
    auto& r = state.results[i];
    if (const auto* resumed = recovery_.resumed(i)) {
      r = *resumed;
      skipped.push_back(i);
    } else if (const auto* q = recovery_.quarantined(pruned_[i])) {
      r.status = q->status;
      r.reason = fmt::format("quarantined: it {} before with this kernel and toolchain ({}); it is skipped until "
                             "either changes",
                             q->status == candidate_status::hung ? "hung" : "crashed", q->reason);
      skipped.push_back(i);
    }
  }
  return skipped;
}

template <Backend B, class Bench, CacheManager Cache>
std::vector<std::size_t> tuning_job<B, Bench, Cache>::measuring_devices() {
  std::vector<std::size_t> devs{ctx_.settings.device};
  if (ctx_.settings.per_device_arguments && pruned_.size() > 1) {
    for (std::size_t d = 0; d < ctx_.devices.size(); ++d)
      if (d != ctx_.settings.device && ctx_.interchangeable(ctx_.devices[ctx_.settings.device], ctx_.devices[d])) {
        call_->add_device(d);
        devs.push_back(d);
      }
  }
  return devs;
}

template <Backend B, class Bench, CacheManager Cache>
void tuning_job<B, Bench, Cache>::measure_one(shared_state& state, std::size_t i, std::size_t d, std::size_t launch_dev,
                                              const bench_options& bopts, std::size_t n, bool isolate,
                                              std::optional<std::size_t> next) {
  auto& r = state.results[i];
  r.device = static_cast<int>(d);
  r.resumed = false; // measured now
  try {
    std::optional<function_type> fn; // loaded here unless the tuning's isolated copy loads it
    const measurement m = [&] {
      const auto phase = state.timeline.measure_phase();
      if (isolate && detail::fork_isolation<B>()) {
        tuning_timeline::scope span(state.timeline, i, phase, ctx_.device_ids[d], "forked copy");
        return measure_in_fork(state, i, d, bopts, n, next);
      }
      {
        tuning_timeline::scope span(state.timeline, i, trace_phase::load, ctx_.device_ids[d]);
        fn.emplace(call_->load(*state.binaries[i], r.cfg, d)); // runs on_load
      }
      tuning_timeline::scope span(state.timeline, i, phase, ctx_.device_ids[d],
                                  isolate && detail::worker_isolation<B>() ? "device worker" : "");
      return call_->time(*state.binaries[i], *fn, r.cfg, d, bopts, n, isolate);
    }();
    if (m.times.size() < 3) throw error("the benchmarker returned fewer than 3 quantiles");
    r.time = {m.times[0], m.times[1], m.times[2]};
    r.method = m.method;
    r.rsd = m.rsd;
    r.samples = m.samples;
    r.status = candidate_status::ok;
    if (n == 1) r.method = single_config_method; // nothing to choose: run once, not timed (Triton's rule)
    if (fn && d == launch_dev) state.loaded[i].emplace(*std::move(fn));
  } catch (...) {
    detail::record_failure(r, std::current_exception());
  }
  state.events.push(typename shared_state::event{false, i, d});
}

template <Backend B, class Bench, CacheManager Cache>
std::vector<std::size_t> tuning_job<B, Bench, Cache>::load_finalists(shared_state& state,
                                                                     const std::vector<std::size_t>& finalists,
                                                                     std::size_t d) const {
  std::vector<std::size_t> kept;
  for (auto i : finalists) {
    try {
      if (!state.loaded[i]) state.loaded[i].emplace(call_->load(*state.binaries[i], state.results[i].cfg, d));
      kept.push_back(i);
    } catch (...) {
      detail::record_failure(state.results[i], std::current_exception());
    }
  }
  return kept;
}

template <Backend B, class Bench, CacheManager Cache>
void tuning_job<B, Bench, Cache>::recall(Cache& cache) {
  const auto& dev = ctx_.devices[ctx_.settings.device];
  warn(recovery_.recall(cache, key_text_, pruned_, ctx_.backend.fingerprint(dev), ctx_.kernel.digest()));
  decide_isolation(recovery_.crashed_before());
}

template <Backend B, class Bench, CacheManager Cache>
void tuning_job<B, Bench, Cache>::decide_isolation(bool crashed_before) {
  const std::string mode = knobs().autotuning.isolate.get();
  std::string why_not;
  isolate_ = detail::isolation_applies<B, Bench>(mode == "on" || (mode == "auto" && crashed_before), mode,
                                                 ctx_.settings, pruned_, why_not);
  if constexpr (detail::PrestartsIsolation<B>)
    if (isolate_ && detail::worker_isolation<B>()) ctx_.backend.prestart_isolation(ctx_.devices[ctx_.settings.device]);
  if (!why_not.empty() && !warned_isolation_) ctx_.emit(tuning_warning{ctx_.kernel.name, std::move(why_not)});
  warned_isolation_ = warned_isolation_ || !why_not.empty();
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::read_result(Cache& cache) const -> boost::asio::awaitable<std::optional<tuning_result>> {
  auto reading = read_stored_result(cache, ctx_.result_file(), pruned_);
  co_return co_await std::move(reading);
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::store_result(Cache& cache, const tuning_result& result) const
    -> boost::asio::awaitable<void> {
  // The winner's binary goes beside the result where the cache keeps companions (one round trip to read both).
  auto winner = ctx_.binaries.companion(ctx_.kernel, result.best(), ctx_.devices[ctx_.settings.device]);
  auto storing = store_tuning_result(cache, ctx_.result_file(), result, std::move(winner));
  if (auto failed = co_await std::move(storing))
    ctx_.emit(tuning_warning{ctx_.kernel.name, fmt::format("could not store the tuning result: {}", *failed)});
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::finish_from_cache(tuning_result stored) -> boost::asio::awaitable<outcome> {
  stored.launch_options = detail::uses_launch_options<B>();
  // The stored configs lack hook functions: use the user's equal configs.
  for (std::size_t i = 0; i < pruned_.size(); ++i) stored.candidates[i].cfg = pruned_[i];
  ++ctx_.cached;
  stored.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - start_).count();
  auto finishing = finish(std::move(stored), std::nullopt);
  co_return co_await std::move(finishing);
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::finish(tuning_result result, std::optional<function_type> fn)
    -> boost::asio::awaitable<outcome> {
  auto shared = std::make_shared<const tuning_result>(std::move(result));
  if (!fn) {
    const config& best = shared->best();
    const auto& dev = ctx_.devices[ctx_.settings.device];
    auto compiling = detail::run_on(ctx_.eng.compile_executor(), [&] { return ctx_.compile(best, dev, {}); });
    auto bin = co_await std::move(compiling);
    auto loading = detail::run_on(ctx_.eng.device_executor(ctx_.device_ids[ctx_.settings.device]),
                                  [&] { return call_->load(bin, best, ctx_.settings.device); });
    fn.emplace(co_await std::move(loading));
  }
  ctx_.emit(tuning_selected{shared.get(), std::exchange(timeline_, nullptr)});
  co_return outcome{std::move(shared), *std::move(fn)};
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::wait_for_share(std::size_t d) -> boost::asio::awaitable<void> {
  detail::device_share& share = detail::device_share::of(ctx_.device_ids[d]);
  for (;;) {
    // Asked on the device's thread, where background measurements start, so that what it answers holds.
    auto asking = detail::run_on(ctx_.eng.device_executor(ctx_.device_ids[d]),
                                 [&share] { return share.pause(detail::device_share::clock::now()); });
    const auto wait = co_await std::move(asking);
    if (wait <= detail::device_share::clock::duration::zero()) co_return;
    pacing_->paused(wait);
    auto waiting = detail::pause_for(ctx_.eng.coordinator(), wait);
    co_await std::move(waiting);
  }
}

template <Backend B, class Bench, CacheManager Cache>
auto tuning_job<B, Bench, Cache>::remeasure_noisy(shared_state& state, pipeline_type& pipeline, bench_options o)
    -> boost::asio::awaitable<void> {
  for (std::size_t retry = 0; retry < detail::background_retries; ++retry) {
    const std::vector<std::size_t> noisy = detail::noisy_measurements(state.results);
    if (noisy.empty()) co_return;
    std::vector<candidate_result> before;
    for (auto i : noisy) before.push_back(state.results[i]);
    auto again = pipeline.remeasure(noisy, o);
    co_await std::move(again);
    remeasured_ += noisy.size();
    for (std::size_t k = 0; k < noisy.size(); ++k) {
      auto& r = state.results[noisy[k]];
      // A measurement that failed now, or was noisier, gives way to the first one.
      if (detail::measured_spread(r) > detail::measured_spread(before[k])) r = std::move(before[k]);
    }
  }
}

} // namespace cotune
