// 06: tune without blocking, and watch the tuning as it happens. Two problem sizes (two tuning keys)
// are tuned at once: one through `async_tune` with `boost::asio::use_future`, the other with a
// callback as its completion token, while the main thread goes on with its own work. An observer
// receives every event of both tunings (compiled, measured, failed, selected, cache hits, warnings)
// and counts them; the program checks what it saw and the tuned kernel's output.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/use_future.hpp> // use_future is not in cotune's umbrella: the caller includes it

#include <cotune/cotune.hpp>

static const char* scale_code = R"(
// y = a * x, in chunks of UNROLL independent statements.
extern "C" void scale(const float* x, float* y, int n, float a) {
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) y[i + u] = a * x[i + u];
  for (; i < n; ++i) y[i] = a * x[i];
}
)";

/// Counts the events of every tuning it watches and prints one line per measured candidate. Events of
/// one tuning arrive in order from one thread at a time; two tunings may deliver theirs concurrently,
/// so the counters are atomic and the printing is serialised.
class event_counter final : public cotune::observer {
public:
  std::atomic<int> compiled{0}, measured{0}, failed{0}, selected{0}, warnings{0};

protected:
  void on_event(const cotune::tuning_event& e) override {
    std::visit([this](const auto& event) { handle(event); }, e);
  }

private:
  void handle(const cotune::candidate_compiled&) { ++compiled; }
  void handle(const cotune::candidate_measured& e) {
    ++measured;
    std::lock_guard lock(print_);
    std::printf("  [%s] measured %zu/%zu: {%s} %.4f ms\n", e.key_text.c_str(), e.index + 1, e.total,
                e.result->cfg.params_text().c_str(), e.result->time[0]);
  }
  void handle(const cotune::candidate_failed&) { ++failed; }
  void handle(const cotune::tuning_selected& e) {
    ++selected;
    std::lock_guard lock(print_);
    std::printf("  [%s] selected {%s}\n", e.result->key_text.c_str(), e.result->shown(e.result->best()).c_str());
  }
  void handle(const cotune::tuning_warning& e) {
    ++warnings;
    std::lock_guard lock(print_);
    std::printf("  warning: %s\n", e.message.c_str());
  }
  template <class Event>
  void handle(const Event&) {} // tuning_started, cache_hit: not counted here

  std::mutex print_;
};

using signature = void(cotune::host_span<const float>, cotune::host_span<float>, int, float);

int main() {
  cotune::kernel_source kernel{.name = "scale", .code = scale_code, .entry = "scale"};
  auto configs = cotune::config_space{}.axis("UNROLL", {1, 2, 4, 8}).build();
  auto counter = std::make_shared<event_counter>();
  cotune::autotuner<signature> tuner{
      kernel, configs, {.arg_names = {"x", "y", "n", "a"}, .key = {"n"}, .observers = {counter}}};

  const int small = 1 << 12, large = 1 << 18;
  std::vector<float> x(large, 1.5f), y(large, 0.0f);
  const float a = 2.0f;

  // 1. A future: async_tune returns at once; get() waits for the result (or rethrows the tuning's error).
  std::future<const cotune::tuning_result*> first =
      tuner.async_tune(cotune::host_span<const float>(x.data(), small), cotune::host_span<float>(y.data(), small), small, a,
                       boost::asio::use_future);

  // 2. A callback: called on cotune's coordinator thread with (error, result) when the tuning ends.
  std::promise<std::string> second_done;
  tuner.async_tune(x, y, large, a, [&](std::exception_ptr error, const cotune::tuning_result* result) {
    if (error) second_done.set_exception(error);
    else second_done.set_value(result->shown(result->best()));
  });

  // Meanwhile the calling thread is free (here it only prepares the reference).
  std::vector<float> expected(large);
  for (int i = 0; i < large; ++i) expected[i] = a * x[i];

  const cotune::tuning_result* small_result = first.get();
  const std::string large_best = second_done.get_future().get();
  std::printf("n=%d: best {%s}; n=%d: best {%s}\n", small, small_result->shown(small_result->best()).c_str(), large,
              large_best.c_str());

  // Both keys are tuned now: each call is a lookup and a launch.
  tuner(x, y, large, a);
  double max_err = 0;
  for (int i = 0; i < large; ++i) max_err = std::max(max_err, double(std::fabs(y[i] - expected[i])));

  std::printf("events: %d compiled, %d measured, %d failed, %d selected, %d warnings\n", counter->compiled.load(),
              counter->measured.load(), counter->failed.load(), counter->selected.load(), counter->warnings.load());
  const bool events_ok = counter->selected == 2 && counter->measured >= 2 && counter->failed == 0;
  std::printf("tuned kernel output: max abs error %.2e -> %s\n", max_err, max_err == 0 ? "OK" : "WRONG");
  return events_ok && max_err == 0 ? 0 : 1;
}
