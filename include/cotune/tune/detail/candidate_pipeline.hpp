#pragma once
/// \file `cotune::candidate_pipeline`: how one tuning's candidates flow through the compile pool and
/// the devices. The search proposes batches (`depth` of them in flight, so that the compile pool
/// never waits for a batch's measurements); each candidate is compiled on the pool and then measured
/// on a free device: as soon as it is compiled (GPU backends), or once every proposed candidate is
/// compiled (the host backend, whose benchmarks would compete with its compiles). Compiles and
/// measurements report back through the tuning's event queue, so that only the tuning's coroutine
/// touches the pipeline; the tasks hold the shared state, not the pipeline.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>

#include <cotune/bench/measurement.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/detail/tuning_core.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/detail/tuning_timeline.hpp>

namespace cotune {

/// One tuning's candidates between the search, the compile pool and the devices. `Core` is the
/// tuner's core (tune/tuning_core.hpp); `State` the tuning's shared state: `results`, `binaries`,
/// `events` (of `State::event`) and `stop`.
template <class Core, class State>
class candidate_pipeline {
public:
  /// On device `d`'s thread: measures candidate `i` with `o` and pushes its event. `next`: the
  /// candidate that device is likely to measure next with `o` (the next ready one, when no other device
  /// is free to take it), for a measurer that prepares it while `i` runs (an isolated worker).
  using measure_fn =
      std::function<void(std::size_t i, std::size_t d, const bench_options& o, std::optional<std::size_t> next)>;
  /// Candidate `i` compiled (`compiled`), or has its outcome: a failed compile or a measurement.
  using report_fn = std::function<void(std::size_t i, bool compiled)>;

  /// `devices`: those that measure, the launch device first; `overlaps_compile`: measure while compiling.
  candidate_pipeline(Core& ctx, std::shared_ptr<State> state, std::vector<std::size_t> devices,
                     std::size_t launch_device, bool overlaps_compile, measure_fn measure, report_fn report)
      : ctx_(ctx), state_(std::move(state)), launch_(launch_device), overlaps_(overlaps_compile),
        measure_(std::move(measure)), report_(std::move(report)), idle_(devices.rbegin(), devices.rend()),
        taken_(state_->results.size(), false), done_(state_->results.size(), false), order_(state_->results.size()),
        rank_(state_->results.size()) {
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = rank_[i] = i;
  }

  /// Candidates to compile and measure before the others (without a session: the seeds of a
  /// transfer from tuned neighbours), in this order; the rest keep config order.
  void measure_first(const std::vector<std::size_t>& first) {
    std::vector<std::size_t> order;
    std::vector<bool> placed(order_.size(), false);
    for (auto i : first)
      if (i < placed.size() && !placed[i]) {
        placed[i] = true;
        order.push_back(i);
      }
    for (std::size_t i = 0; i < placed.size(); ++i)
      if (!placed[i]) order.push_back(i);
    order_ = std::move(order);
    for (std::size_t r = 0; r < order_.size(); ++r) rank_[order_[r]] = r;
  }

  /// A candidate whose outcome is known already (resumed, quarantined): never compiled or measured.
  void skip(std::size_t i) {
    taken_[i] = done_[i] = true;
    ++posted_;
    ++compiled_;
    ++finished_;
  }

  /// The first pass: compiles and measures with `o` what `session` proposes, in batches of `batch`
  /// (`depth` in flight), or every candidate not skipped in batches of `batch` without a session,
  /// until nothing more is proposed and every proposed candidate has its outcome.
  /// The caller awaits it at once: `session` and this pipeline are the caller's (the rest is copied).
  boost::asio::awaitable<void> run(search_session* session, std::size_t batch, std::size_t depth, bench_options o) {
    session_ = session;
    batch_ = batch;
    depth_ = depth;
    refill();
    while (finished_ < posted_) {
      auto popping = state_->events.pop();
      auto ev = co_await std::move(popping);
      if (ev.compiled) {
        ++compiled_;
        if (!state_->binaries[ev.index]) {
          ++finished_;
          outcome(ev.index); // a compile failure is an outcome too
        } else {
          report_(ev.index, true);
          ready_.push_back(ev.index);
        }
      } else {
        ++finished_;
        idle_.push_back(ev.device);
        outcome(ev.index);
      }
      refill();
      if (overlaps_ || compiled_ == posted_) dispatch(o);
    }
  }

  /// Measures `which` (all compiled) again with `o`, each on the next free device. Awaited at once,
  /// as run() is.
  boost::asio::awaitable<void> remeasure(std::vector<std::size_t> which, bench_options o) {
    ready_ = which;
    dispatch(o);
    for (std::size_t k = 0; k < which.size(); ++k) {
      auto popping = state_->events.pop();
      auto ev = co_await std::move(popping);
      idle_.push_back(ev.device);
      dispatch(o);
    }
  }

  /// Candidates proposed (compiled or about to be), skipped ones included.
  [[nodiscard]] std::size_t proposed() const noexcept { return posted_; }
  /// Whether candidate `i` was proposed or skipped.
  [[nodiscard]] bool proposed(std::size_t i) const { return taken_[i]; }

private:
  using clock = std::chrono::steady_clock;

  void post_compile(std::size_t i) {
    taken_[i] = true;
    ++posted_;
    boost::asio::post(ctx_.eng.compile_executor(), [ctx = &ctx_, state = state_, i, launch = launch_] {
      auto& r = state->results[i];
      const auto t0 = clock::now();
      try {
        state->binaries[i] = ctx->compile(r.cfg, ctx->devices[launch], state->stop.get_token());
        r.binary_from_cache = state->binaries[i]->from_cache;
      } catch (...) {
        detail::record_failure(r, std::current_exception());
      }
      const auto t1 = clock::now();
      r.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      state->timeline.add({i, trace_phase::compile, t0, t1, "compile pool", tuning_timeline::this_thread(), {},
                           r.binary_from_cache ? "binary cache hit" : ""});
      state->events.push(typename State::event{true, i, 0});
    });
  }

  /// Drops the completed batches at the front and proposes new ones until `depth` are in flight.
  void refill() {
    while (!flight_.empty() &&
           std::all_of(flight_.front().begin(), flight_.front().end(), [&](auto i) { return done_[i]; }))
      flight_.erase(flight_.begin());
    while (flight_.size() < depth_) {
      std::vector<std::size_t> b;
      if (session_) b = session_->propose(batch_);
      else
        for (std::size_t k = 0; k < order_.size() && b.size() < batch_; ++k)
          if (!taken_[order_[k]]) b.push_back(order_[k]);
      if (b.empty()) break;
      for (auto i : b) post_compile(i);
      flight_.push_back(std::move(b));
    }
  }

  void outcome(std::size_t i) {
    done_[i] = true;
    const auto& r = state_->results[i];
    if (session_) session_->tell({i, r.time[0], r.status == candidate_status::ok});
    report_(i, false);
  }

  /// Sends ready candidates to idle devices, in config order (seeds first: measure_first).
  void dispatch(const bench_options& o) {
    std::sort(ready_.begin(), ready_.end(), [&](std::size_t a, std::size_t b) { return rank_[a] > rank_[b]; });
    while (!ready_.empty() && !idle_.empty()) {
      const std::size_t i = ready_.back(), d = idle_.back();
      ready_.pop_back();
      idle_.pop_back();
      std::optional<std::size_t> next;
      if (idle_.empty() && !ready_.empty()) next = ready_.back();
      boost::asio::post(ctx_.eng.device_executor(ctx_.device_ids[d]),
                        [measure = measure_, i, d, o, next] { measure(i, d, o, next); });
    }
  }

  Core& ctx_;
  std::shared_ptr<State> state_;
  std::size_t launch_;
  bool overlaps_;
  measure_fn measure_;
  report_fn report_;
  std::vector<std::size_t> ready_, idle_; ///< compiled, waiting for a device; free devices
  std::vector<bool> taken_, done_;        ///< per candidate: proposed (or skipped); has its outcome
  std::vector<std::size_t> order_, rank_; ///< the order without a session, and each candidate's place in it
  std::vector<std::vector<std::size_t>> flight_; ///< proposed batches not complete yet
  search_session* session_ = nullptr;
  std::size_t batch_ = 1, depth_ = 1;
  std::size_t posted_ = 0, compiled_ = 0, finished_ = 0;
};

} // namespace cotune
