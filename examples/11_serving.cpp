// 11: serve requests without ever waiting for a tuning. A stream of 300 requests with 20 problem sizes,
// none tuned at start: with `first_call = serve` the first request of a size launches a stand-in at
// once (the winner of the nearest size tuned so far, else the first candidate) while that size is
// tuned in the background on cotune's threads; when its tuning ends, its winner replaces the stand-in
// for every later request. The program prints each request's latency and what served it, then checks
// that every size's first request was served by a stand-in (none waited for a tuning) and that, once
// the tunings have finished, every request runs its size's winner; it exits non-zero otherwise.
// Built with cotune's CUDA module and run where a GPU is present, it then serves the same stream of
// requests with a CUDA kernel on the GPU and checks the same things (without a GPU it says so).
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
#if defined(COTUNE_HAS_CUDA)
#include <cotune/cuda/cuda.hpp>
#endif

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

/// 20 sizes from `smallest` elements up 256 times, multiples of 16.
static std::vector<int> request_sizes(int smallest) {
  std::vector<int> sizes;
  for (int i = 0; i < 20; ++i) sizes.push_back(static_cast<int>(smallest * std::pow(2.0, i * 8.0 / 19.0)) / 16 * 16);
  return sizes;
}

/// The stream of requests: a new size joins every 12 requests, one request every 2 ms, so that sizes
/// arriving once others are tuned start from the nearest tuned size's winner.
template <class Serve>
static void request_stream(const std::vector<int>& sizes, Serve&& serve) {
  for (int k = 0; k < 300; ++k) {
    const int known = std::min<int>(static_cast<int>(sizes.size()), 1 + k / 12);
    serve(sizes[static_cast<std::size_t>((k * 7) % known)]);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/// Prints what served each size and the summary; true when every size was first served by a stand-in,
/// every output was right and every size runs its winner after the tunings.
static bool report(serving_log& log, const char* where, int requests, int untuned, double worst_untuned_ms,
                   std::size_t sizes, int wrong_outputs, int not_winner) {
  std::lock_guard lock(log.mutex);
  std::size_t stand_ins = 0;
  for (const auto& [key, k] : log.keys) {
    std::printf("[%s] stand-in {%s} (%s) served %zu requests for %.1f ms, then the winner {%s}\n", key.c_str(),
                k.stand_in.c_str(), k.source.c_str(), k.served, k.served_ms, k.winner.c_str());
    stand_ins += k.stand_in.empty() ? 0 : 1;
  }
  std::printf("%s: %d requests; %d on sizes not tuned yet (slowest %.3f ms, a stand-in's first compile included); "
              "%zu of %zu sizes served by a stand-in at first; %d wrong outputs; %d sizes not on their winner after "
              "tuning\n",
              where, requests, untuned, worst_untuned_ms, stand_ins, sizes, wrong_outputs, not_winner);
  return stand_ins == sizes && wrong_outputs == 0 && not_winner == 0;
}

#if defined(COTUNE_HAS_CUDA)
namespace cuda = cotune::cuda;

static const char* gpu_scale_code = R"(
// y = a * x, BLOCK elements per block.
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK)
serve_scale_gpu(const float* __restrict__ x, float* __restrict__ y, int n, float a) {
  const long long base = (long long)blockIdx.x * BLOCK;
  for (int k = threadIdx.x; k < BLOCK; k += COTUNE_THREADS_PER_BLOCK) {
    const long long i = base + k;
    if (i < n) y[i] = a * x[i];
  }
}
)";

/// The same stream of requests served on the GPU: 20 sizes from 64 Ki to 16 Mi elements.
static bool serve_on_gpu() {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("GPU: no CUDA device, the GPU stream is skipped (%s)\n", cuda::availability().message.c_str());
    return true;
  }
  const cuda::device& d = devices.front();
  using gpu_signature = void(cuda::device_span<const float>, cuda::device_span<float>, int, float);
  using gpu_tuner = cotune::autotuner<gpu_signature, cuda::cuda_backend>;
  auto log = std::make_shared<serving_log>();
  std::deque<cuda::device_buffer<float>> scratch; // the background tunings' own buffers, one pair per size
  gpu_tuner::options opts{
      .arg_names = {"x", "y", "n", "a"},
      .key = {"n"},
      .grid = [](const cotune::config& c, const auto&, const auto&, const int& n, const auto&) {
        return cotune::grid(c, cdiv(n, cotune::p("BLOCK")));
      },
      .bench = cotune::bench_options{.warmup_ms = 1, .rep_ms = 10},
      .observers = {log},
      .first_call = cotune::first_call_mode::serve,
      .background_share = 0.5, // half the GPU for the tunings: a demo that ends in seconds
      .tuning_args = [&](cuda::device_span<const float>, cuda::device_span<float>, int n, float a) {
        auto& x = scratch.emplace_back(d, std::vector<float>(static_cast<std::size_t>(n), 1.0f));
        auto& y = scratch.emplace_back(d, static_cast<std::size_t>(n));
        return std::tuple(cuda::device_span<const float>(x.span()), y.span(), n, a);
      }};
  gpu_tuner tuner{{.name = "serve_scale_gpu", .code = gpu_scale_code, .entry = "serve_scale_gpu"},
                  cotune::config_space{}.axis("BLOCK", {1024, 2048, 4096, 8192}).num_warps({4, 8}).build(), opts};

  const std::vector<int> sizes = request_sizes(64 * 1024);
  const int biggest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float> hx(static_cast<std::size_t>(biggest));
  for (int i = 0; i < biggest; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 101) * 0.5f;
  cuda::device_buffer<float> x(d, hx), y(d, static_cast<std::size_t>(biggest));
  const float a = 3.0f;
  auto xs = [&](int n) { return cuda::device_span<const float>(x.span()).subspan(0, static_cast<std::size_t>(n)); };
  auto ys = [&](int n) { return y.span().subspan(0, static_cast<std::size_t>(n)); };

  using clock = std::chrono::steady_clock;
  int request = 0, untuned = 0;
  double worst_untuned_ms = 0;
  auto serve = [&](int n) {
    const bool was_tuned = tuner.best_config(xs(n), ys(n), n, a) != nullptr;
    const auto start = clock::now();
    tuner(xs(n), ys(n), n, a); // the launch; the request's latency is what the caller waits for it
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    const cotune::config* ran = tuner.serving_config(xs(n), ys(n), n, a);
    if (!was_tuned) {
      ++untuned;
      worst_untuned_ms = std::max(worst_untuned_ms, ms);
    }
    std::printf("GPU request %3d  n=%8d  %8.3f ms  %s {%s}\n", ++request, n, ms, was_tuned ? "winner  " : "stand-in",
                ran ? ran->params_text().c_str() : "?");
  };
  request_stream(sizes, serve);
  const std::size_t still_tuning = tuner.background_tunings();
  tuner.wait_tuned();
  std::printf("-- GPU: every size tuned (%zu were still tuning when the stream ended) --\n", still_tuning);
  int not_winner = 0, wrong_outputs = 0;
  for (int n : sizes) {
    y.zero();
    serve(n);
    const cotune::config* best = tuner.best_config(xs(n), ys(n), n, a);
    if (!best || tuner.serving_config(xs(n), ys(n), n, a) != best) ++not_winner;
    const std::vector<float> out = y.to_vector(); // waits for the launch
    for (int i = 0; i < n; ++i)
      if (out[static_cast<std::size_t>(i)] != a * hx[static_cast<std::size_t>(i)]) {
        ++wrong_outputs;
        break;
      }
  }
  return report(*log, "GPU", request, untuned, worst_untuned_ms, sizes.size(), wrong_outputs, not_winner);
}
#else
static bool serve_on_gpu() { return true; } // built without cotune's CUDA module
#endif

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
      .background_share = 0.5, // half a core's time for the tunings (the default, 0.1, suits a busy server)
      .tuning_args = [&scratch](cotune::host_span<const float>, cotune::host_span<float>, int n, float a) {
        auto& x = scratch.emplace_back(static_cast<std::size_t>(n), 1.0f);
        auto& y = scratch.emplace_back(static_cast<std::size_t>(n), 0.0f);
        return std::tuple(cotune::host_span<const float>(x.data(), x.size()), cotune::host_span<float>(y.data(), y.size()),
                          n, a);
      }};
  cotune::autotuner<signature> tuner{kernel, configs, opts};

  // 20 sizes from 4 Ki to 1 Mi elements.
  const std::vector<int> sizes = request_sizes(4096);
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

  request_stream(sizes, serve);
  const std::size_t still_tuning = tuner.background_tunings();

  tuner.wait_tuned(); // a server never has to; the example does, to check what comes next
  std::printf("-- every size tuned (%zu were still tuning when the stream ended) --\n", still_tuning);
  int not_winner = 0;
  for (int n : sizes) {
    serve(n);
    const cotune::config* best = tuner.best_config(x, y, n, a);
    if (!best || tuner.serving_config(x, y, n, a) != best) ++not_winner;
  }

  bool ok = report(*log, "CPU", request, untuned_requests, worst_untuned_ms, sizes.size(), wrong_outputs, not_winner);
  ok = serve_on_gpu() && ok;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
