#pragma once
/// \file `cotune::tuning_timeline`: when each candidate of one tuning was compiled, loaded, verified
/// and measured, and on which thread. The compile pool and the device threads add spans as they
/// work; the tuning turns them into its phases (tune/tuning_phases.hpp) and hands them to observers
/// with `tuning_selected`, where the trace observer (tune/trace.hpp, COTUNE_TRACE) writes them out.
///
///     {
///       tuning_timeline::scope measuring(timeline, i, timeline.measure_phase(), device_key);
///       ...                       // a tuning_timeline::nested(trace_phase::verify) in here, on this
///     }                           // thread, is recorded as candidate i's verification

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/tune/tuning_phases.hpp>

namespace cotune {

/// What a span of a tuning was spent on. `screen`, `measure` and `final` are measurements: a first
/// pass that screens, a full first pass, and the finals after screening.
enum class trace_phase { compile, load, verify, screen, measure, final };

[[nodiscard]] constexpr std::string_view to_string(trace_phase p) noexcept {
  switch (p) {
  case trace_phase::compile: return "compile";
  case trace_phase::load: return "load";
  case trace_phase::verify: return "verify";
  case trace_phase::screen: return "screen";
  case trace_phase::measure: return "measure";
  case trace_phase::final: return "final";
  }
  return "?";
}

/// One span of a tuning: a candidate in one phase, on one thread.
struct trace_span {
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t several = std::numeric_limits<std::size_t>::max();

  std::size_t candidate = several; ///< its index in the tuning's candidates; `several` for the finals
  trace_phase phase = trace_phase::compile;
  clock::time_point start{}, end{};
  /// The thread's kind: "compile pool", or the device thread's key ("host (x86_64,...)#0", a GPU's key).
  std::string track{};
  std::size_t thread = 0; ///< the OS thread's number in this process (tuning_timeline::this_thread)
  /// Where the work ran when not on that thread itself: "forked copy" or "device worker" (isolation).
  std::string isolated{};
  std::string note{}; ///< "binary cache hit", the finalists of a finals span

  [[nodiscard]] double ms() const noexcept { return std::chrono::duration<double, std::milli>(end - start).count(); }
};

/// The spans of one tuning. Thread-safe: the compile pool and the device threads add to it.
class tuning_timeline {
public:
  using clock = trace_span::clock;

  tuning_timeline() = default;
  tuning_timeline(const tuning_timeline&) = delete;
  tuning_timeline& operator=(const tuning_timeline&) = delete;

  /// Records a span.
  void add(trace_span s) {
    std::lock_guard lock(mutex_);
    spans_.push_back(std::move(s));
  }

  /// A copy of the spans recorded so far.
  [[nodiscard]] std::vector<trace_span> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }

  /// The first pass's measurements are a screening pass (`screening`) or full ones.
  void first_pass(bool screening) noexcept { stage_ = screening ? trace_phase::screen : trace_phase::measure; }
  /// Measurements from now on are the finals.
  void finals() noexcept { stage_ = trace_phase::final; }
  /// The phase of a measurement that starts now.
  [[nodiscard]] trace_phase measure_phase() const noexcept { return stage_; }

  /// The tuning's bounds (set by close()).
  [[nodiscard]] clock::time_point start() const noexcept { return start_; }
  [[nodiscard]] clock::time_point end() const noexcept { return end_; }

  /// Ends the timeline of a tuning that ran from `start` to `end` with `compile_threads` compile
  /// threads, and returns its phases (its devices: those its spans name).
  [[nodiscard]] COTUNE_DECL tuning_phases close(clock::time_point start, clock::time_point end,
                                                std::size_t compile_threads);

  /// This OS thread's number in this process (1, 2, ... in the order threads first ask).
  [[nodiscard]] COTUNE_DECL static std::size_t this_thread();

  class nested;

  /// Records [construction, destruction) as a span of `candidate` on this thread; while it lives,
  /// `nested` spans made on this thread belong to it.
  class scope {
  public:
    scope(tuning_timeline& t, std::size_t candidate, trace_phase phase, std::string track, std::string isolated = {},
          std::string note = {})
        : timeline_(t), outer_(current_), span_{candidate, phase, clock::now(), {}, std::move(track), this_thread(),
                                                std::move(isolated), std::move(note)} {
      current_ = this;
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    ~scope() {
      current_ = outer_;
      span_.end = clock::now();
      timeline_.add(std::move(span_));
    }

  private:
    friend class tuning_timeline::nested;
    tuning_timeline& timeline_;
    scope* outer_;
    trace_span span_;
  };

  /// Inside a `scope` on this thread: records [construction, destruction) as a `phase` span of the
  /// scope's candidate (a verification inside a measurement); outside any scope (an isolated copy of
  /// the process, a caller without a timeline): nothing.
  class nested {
  public:
    explicit nested(trace_phase phase) : outer_(current_), phase_(phase), start_(clock::now()) {}
    nested(const nested&) = delete;
    nested& operator=(const nested&) = delete;
    ~nested() {
      if (!outer_) return;
      const auto& s = outer_->span_;
      outer_->timeline_.add(trace_span{s.candidate, phase_, start_, clock::now(), s.track, s.thread, s.isolated, {}});
    }

  private:
    scope* outer_;
    trace_phase phase_;
    clock::time_point start_;
  };

private:
  // The innermost scope of this thread (a static data member: scope and nested see one per thread).
  static inline thread_local scope* current_ = nullptr;

  mutable std::mutex mutex_;
  std::vector<trace_span> spans_;
  std::atomic<trace_phase> stage_{trace_phase::measure};
  clock::time_point start_{}, end_{};
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/tuning_timeline.ipp>
#endif
