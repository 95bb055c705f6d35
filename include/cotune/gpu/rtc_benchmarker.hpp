#pragma once
/// \file `cotune::gpu::rtc_benchmarker<T>`: a GPU benchmarker (gpu/event_timing.hpp's loop) over a
/// runtime's events and graphs, written once. `cuda::cuda_benchmarker` and `hip::hip_benchmarker` are
/// this class over their runtime's timing calls `T` (cuda/cuda_benchmarker.hpp, hip/hip_benchmarker.hpp):
///
///     using memory = ...; using device = ...;           // its DeviceMemoryRuntime and device
///     using result = ...; using event = ...; using graph = ...; using graph_exec = ...;
///     static const context& context_of(int ordinal);      // the device's context (throws without a runtime)
///     static const auto& knobs();                       // flush_factor and graph
///     static bool ok(result);
///     static result create_event(const context&, event*);  static void destroy_event(const context&, event);
///     static result record(const context&, event);      // on the context's stream
///     static result wait(const context&, event);
///     static result elapsed(const context&, float* ms, event from, event to);
///     static result begin_capture(const context&);      // relaxed: hooks may allocate while capturing
///     static result end_capture(const context&, graph*);
///     static result instantiate(const context&, graph_exec*, graph);
///     static result launch_graph(const context&, graph_exec);
///     static void destroy(const context&, graph_exec, graph) noexcept;  // either may be null
///     static void after_first_run(const context&);     // waits for what else the first run queued
///     static constexpr std::string_view create_call, record_call, elapsed_call, capture_call, graph_launch_call;

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/measurement.hpp>
#include <cotune/gpu/event_timing.hpp>

namespace cotune::gpu {

namespace detail {

/// Timing events, created on demand and kept for later benchmarks.
template <class T>
class event_pool {
public:
  explicit event_pool(const typename T::memory::context& ctx) : context_(&ctx) {}
  event_pool(const event_pool&) = delete;
  event_pool& operator=(const event_pool&) = delete;
  ~event_pool() {
    if (events_.empty()) return;
    (void)context_->try_make_current();
    for (auto e : events_) T::destroy_event(*context_, e);
  }
  /// At least `n` events; the context must be current.
  const std::vector<typename T::event>& reserve(std::size_t n) {
    while (events_.size() < n) {
      typename T::event e{};
      context_->check(T::create_event(*context_, &e), T::create_call);
      events_.push_back(e);
    }
    return events_;
  }

private:
  const typename T::memory::context* context_;
  std::vector<typename T::event> events_;
};

} // namespace detail

/// Times callables on one GPU with the runtime's events, an L2 flush sized from the device, and graphs
/// of N launches for kernels under bench.batch_below_us (do_bench's semantics, spec §8.2).
template <class T>
class rtc_benchmarker : public event_benchmarker<rtc_benchmarker<T>, typename T::memory> {
  using base = event_benchmarker<rtc_benchmarker<T>, typename T::memory>;

public:
  using options = event_bench_options;
  using device = typename T::device;

  /// Benchmarks on `d` (its primary context and cotune stream). Throws cotune::error without a runtime.
  explicit rtc_benchmarker(const device& d, options o = {})
      : base(T::context_of(d.ordinal), d.l2_bytes, o), events_(std::make_unique<detail::event_pool<T>>(*this->context_)) {}

  rtc_benchmarker(rtc_benchmarker&&) noexcept = default;
  rtc_benchmarker& operator=(rtc_benchmarker&&) noexcept = default;

private:
  friend base;

  [[nodiscard]] static const auto& runtime_knobs() { return T::knobs(); }
  void after_first_run() const { T::after_first_run(*this->context_); }

  /// The GPU layer's Timer over the runtime's events and graphs.
  struct timer {
    rtc_benchmarker& b;
    typename T::graph graph{};
    typename T::graph_exec exec{};
    explicit timer(rtc_benchmarker& owner) : b(owner) {}
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;
    ~timer() { drop_graph(); }
    [[nodiscard]] const auto& ctx() const { return *b.context_; }
    [[nodiscard]] auto event(std::size_t i) { return b.events_->reserve(i + 1)[i]; }
    void reserve(std::size_t n) { (void)b.events_->reserve(n); }
    void record(std::size_t i) { ctx().check(T::record(ctx(), event(i)), T::record_call); }
    void wait(std::size_t i, const char* what) { ctx().check(T::wait(ctx(), event(i)), what); }
    [[nodiscard]] double elapsed(std::size_t i, std::size_t j) {
      const auto& ev = b.events_->reserve(std::max(i, j) + 1);
      float ms = 0.0f;
      ctx().check(T::elapsed(ctx(), &ms, ev[i], ev[j]), T::elapsed_call);
      return static_cast<double>(ms);
    }
    void flush() { b.flush(); }
    void begin_capture() { ctx().check(T::begin_capture(ctx()), T::capture_call); }
    bool end_capture(bool ok) {
      const auto r = T::end_capture(ctx(), &graph);
      if (!ok || !T::ok(r) || !graph) return false; // an invalidated capture: batches go back to back
      ctx().make_current();
      if (!T::ok(T::instantiate(ctx(), &exec, graph))) {
        exec = {};
        return false;
      }
      return true;
    }
    void replay() { ctx().check(T::launch_graph(ctx(), exec), T::graph_launch_call); }
    void drop_graph() {
      T::destroy(ctx(), exec, graph);
      exec = {};
      graph = {};
    }
  };

  std::unique_ptr<detail::event_pool<T>> events_;
};

} // namespace cotune::gpu
