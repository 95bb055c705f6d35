// 11: serve requests without ever waiting for a tuning. A stream of 300 requests with 20 problem sizes,
// none tuned at start: with `first_call = serve` the first request of a size launches a stand-in at
// once (the winner of the nearest size tuned so far, else the first candidate) while that size is
// tuned in the background on cotune's threads; when its tuning ends, its winner replaces the stand-in
// for every later request. The program prints each request's latency and what served it, then checks
// that every size's first request was served by a stand-in (none waited for a tuning) and that, once
// the tunings have finished, every request runs its size's winner; it exits non-zero otherwise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

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

using signature = void(cotune::host_span<const float>, cotune::host_span<float>, int, float);

/// What served each size while it tuned, and when its winner took over.
class serving_log final : public cotune::observer {
public:
  struct key_log {
    std::string stand_in, source, winner;
    std::size_t served = 0;
    double served_ms = 0;
  };
  std::map<std::string, key_log> keys;
  std::mutex mutex;

protected:
  void on_event(const cotune::tuning_event& e) override {
    std::lock_guard lock(mutex);
    if (const auto* s = std::get_if<cotune::stand_in_served>(&e)) {
      auto& k = keys[s->key_text];
      k.stand_in = s->cfg->params_text();
      k.source = cotune::to_string(s->source) + (s->neighbour.empty() ? "" : " " + s->neighbour);
    } else if (const auto* r = std::get_if<cotune::stand_in_replaced>(&e)) {
      auto& k = keys[r->key_text];
      k.winner = r->winner ? r->winner->params_text() : "(tuning failed)";
      k.served = r->calls_served;
      k.served_ms = r->served_ms;
    }
  }
};

int main() {
  cotune::kernel_source kernel{.name = "serve_scale", .code = scale_code, .entry = "scale"};
  auto configs = cotune::config_space{}.axis("UNROLL", {1, 2, 4, 8}).build();
  auto log = std::make_shared<serving_log>();

  // The background tunings measure with buffers of their own (one pair per size, kept until the end),
  // never with a request's: a request's buffers are its caller's as soon as the call returns.
  std::deque<std::vector<float>> scratch;
  cotune::autotuner<signature>::options opts{
      .arg_names = {"x", "y", "n", "a"},
      .key = {"n"},
      .bench = cotune::bench_options{.warmup_ms = 1, .rep_ms = 10}, // small budgets: a demo, not a study
      .observers = {log},
      .first_call = cotune::first_call_mode::serve,
      .tuning_args = [&scratch](cotune::host_span<const float>, cotune::host_span<float>, int n, float a) {
        auto& x = scratch.emplace_back(static_cast<std::size_t>(n), 1.0f);
        auto& y = scratch.emplace_back(static_cast<std::size_t>(n), 0.0f);
        return std::tuple(cotune::host_span<const float>(x.data(), x.size()), cotune::host_span<float>(y.data(), y.size()),
                          n, a);
      }};
  cotune::autotuner<signature> tuner{kernel, configs, opts};

  // 20 sizes from 4 Ki to 1 Mi elements.
  std::vector<int> sizes;
  for (int i = 0; i < 20; ++i) sizes.push_back(static_cast<int>(4096 * std::pow(2.0, i * 8.0 / 19.0)) / 16 * 16);
  const int biggest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float> x(biggest), y(biggest);
  for (int i = 0; i < biggest; ++i) x[i] = static_cast<float>(i % 101) * 0.5f;
  const float a = 3.0f;

  using clock = std::chrono::steady_clock;
  int request = 0, wrong_outputs = 0, untuned_requests = 0;
  double worst_untuned_ms = 0;
  auto serve = [&](int n) {
    const bool was_tuned = tuner.best_config(x, y, n, a) != nullptr;
    std::fill(y.begin(), y.begin() + n, 0.0f);
    const auto start = clock::now();
    tuner(cotune::host_span<const float>(x.data(), n), cotune::host_span<float>(y.data(), n), n, a);
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    const cotune::config* ran = tuner.serving_config(x, y, n, a);
    for (int i = 0; i < n; ++i)
      if (y[i] != a * x[i]) {
        ++wrong_outputs;
        break;
      }
    if (!was_tuned) {
      ++untuned_requests;
      worst_untuned_ms = std::max(worst_untuned_ms, ms);
    }
    std::printf("request %3d  n=%7d  %8.3f ms  %s {%s}\n", ++request, n, ms, was_tuned ? "winner  " : "stand-in",
                ran ? ran->params_text().c_str() : "?");
  };

  // A new size joins the stream every 12 requests, one request every 2 ms: sizes that arrive once
  // others are tuned start from the nearest tuned size's winner.
  for (int k = 0; k < 300; ++k) {
    const int known = std::min<int>(static_cast<int>(sizes.size()), 1 + k / 12);
    serve(sizes[static_cast<std::size_t>((k * 7) % known)]);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const std::size_t still_tuning = tuner.background_tunings();

  tuner.wait_tuned(); // a server never has to; the example does, to check what comes next
  std::printf("-- every size tuned (%zu were still tuning when the stream ended) --\n", still_tuning);
  int not_winner = 0;
  for (int n : sizes) {
    serve(n);
    const cotune::config* best = tuner.best_config(x, y, n, a);
    if (!best || tuner.serving_config(x, y, n, a) != best) ++not_winner;
  }

  std::lock_guard lock(log->mutex);
  std::size_t stand_ins = 0;
  for (const auto& [key, k] : log->keys) {
    std::printf("[%s] stand-in {%s} (%s) served %zu requests for %.1f ms, then the winner {%s}\n", key.c_str(),
                k.stand_in.c_str(), k.source.c_str(), k.served, k.served_ms, k.winner.c_str());
    stand_ins += k.stand_in.empty() ? 0 : 1;
  }
  std::printf("%d requests; %d on sizes not tuned yet (slowest %.3f ms, a stand-in's first compile included); "
              "%zu of %zu sizes served by a stand-in at first; %d wrong outputs; %d sizes not on their winner after "
              "tuning\n",
              request, untuned_requests, worst_untuned_ms, stand_ins, sizes.size(), wrong_outputs, not_winner);
  const bool ok = stand_ins == sizes.size() && wrong_outputs == 0 && not_winner == 0;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
