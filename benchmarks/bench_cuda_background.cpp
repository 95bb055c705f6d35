// Issue 37 item 2 on a GPU: a key tuned in the background (first_call_mode::serve) beside the
// program's own work on the same device.
//
//   bench_cuda_background [seconds] [runs] [share_b]
//
// (a) Throughput: the program's own kernel (a memory-bound triad over 64 Mi floats, about 0.1 ms on
//     an H200) launched without pause on the program's stream: `seconds` alone (default 5), then
//     while a 100-config key tunes in the background beside it at the default share of device time
//     (COTUNE_BACKGROUND_SHARE, 0.1), then alone again. Prints the ratio of the disturbed throughput
//     to the mean of the two undisturbed ones (issue 37's target: at least 0.90).
// (b) Winners: `runs` times (default 10), the same key tuned in the background (the program's stream
//     running beside it; share `share_b`, default 0.5, so that ten runs fit in about a minute: the
//     share changes when measurements run, not how) and tuned blocking (the device otherwise idle).
//     A run counts when the background winner is the blocking winner, or is within the noise the
//     blocking tuning measured (its timing there within the two configs' p20-p80 bands, or 2%).
//
// Each run's tuner is new and caches no result, so every run measures (candidates' binaries come from
// the binary cache after the first). Whole program: about 2 minutes on an H200. Prints one line per
// step, a verdict line per figure, and lines `FIGURE {json}`. Without a GPU it says so and exits 0.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>

#include "cuda_device.hpp"

namespace cuda = cotune::cuda;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The program's own work: y = a x + y, one element per thread in blocks of BLOCK elements.
const char* triad_code = R"(
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK)
program_triad(const float* __restrict__ x, float* __restrict__ y, int n, float a) {
  const long long base = (long long)blockIdx.x * BLOCK;
  for (int k = threadIdx.x; k < BLOCK; k += COTUNE_THREADS_PER_BLOCK) {
    const long long i = base + k;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
)";

// The key tuned beside it: a polynomial per element, ITEMS elements per thread (consecutive, or
// STRIDED by the block's width), read through the read-only cache or not (LDG).
const char* poly_code = R"(
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK)
background_poly(const float* __restrict__ x, float* __restrict__ out, int n) {
  const long long base = (long long)blockIdx.x * COTUNE_THREADS_PER_BLOCK * ITEMS;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = STRIDED ? base + (long long)k * COTUNE_THREADS_PER_BLOCK + threadIdx.x
                                : base + (long long)threadIdx.x * ITEMS + k;
    if (i < n) {
      const float v = LDG ? __ldg(x + i) : x[i];
      float acc = 1.0f;
      for (int t = 0; t < 12; ++t) acc = acc * v + 0.5f;
      out[i] = acc;
    }
  }
}
)";

using span_in = cuda::device_span<const float>;
using span_out = cuda::device_span<float>;
using triad_tuner = cotune::autotuner<void(span_in, span_out, int, float), cuda::cuda_backend>;
using poly_tuner = cotune::autotuner<void(span_in, span_out, int), cuda::cuda_backend>;

/// 100 candidates: 5 block widths x 5 items per thread x 2 layouts x 2 load paths.
std::vector<cotune::config> poly_configs() {
  return cotune::config_space{}
      .axis("ITEMS", {1, 2, 4, 8, 16})
      .axis("STRIDED", {0, 1})
      .axis("LDG", {0, 1})
      .num_warps({1, 2, 4, 8, 16})
      .build();
}

poly_tuner::options poly_options(cotune::first_call_mode mode, std::optional<double> share) {
  poly_tuner::options o{
      .arg_names = {"x", "out", "n"},
      .key = {"n"},
      .grid = [](const cotune::config& c, const auto&, const auto&, const int& n) {
        const long long per_block = 32LL * c.launch().num_warps * c.at("ITEMS").as_int();
        return cotune::launch_grid{.x = static_cast<unsigned>((n + per_block - 1) / per_block)};
      },
      .cache_results = false, // every run measures
      .first_call = mode};
  o.background_share = share;
  return o;
}

/// The program: its kernel on its own stream, launched in batches with one batch always queued
/// behind the one being waited for, so that the device never runs dry between batches.
class program {
public:
  program(const cuda::device& d, int n)
      : d_(d), ctx_(cuda::driver().context(d.ordinal)), x_(d, std::vector<float>(std::size_t(n), 1.0f)),
        y_(d, std::size_t(n)), n_(n),
        triad_({.name = "program_triad", .code = triad_code, .entry = "program_triad"},
               cotune::config_space{}.axis("BLOCK", {1024}).num_warps({8}).build(),
               {.arg_names = {"x", "y", "n", "a"},
                .key = {"n"},
                .grid = [](const cotune::config& c, const auto&, const auto&, const int& n, const auto&) {
                  return cotune::grid(c, cdiv(n, cotune::p("BLOCK")));
                },
                .first_call = cotune::first_call_mode::wait}) {
    ctx_.make_current();
    y_.zero();
    check(api().stream_create(&stream_, CU_STREAM_NON_BLOCKING), "stream_create");
    for (auto& e : events_) check(api().event_create(&e, 0), "event_create");
    (void)triad_.tune_now(x_.span(), y_.span(), n_, 0.5f); // one config: compiled and loaded, not measured
  }
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  [[nodiscard]] CUstream stream() const { return stream_; }

  /// Launches without pause while `more(elapsed seconds)` says so; returns launches completed per second.
  double run(const std::function<bool(double)>& more) {
    ctx_.make_current();
    constexpr int batch = 50;
    const auto t0 = clock_type::now();
    long long done = 0;
    launch_batch(0, batch);
    for (int k = 1;; ++k) {
      launch_batch(k, batch);
      check(api().event_synchronize(events_[(k - 1) % 2]), "event_synchronize");
      done += batch;
      if (!more(seconds_since(t0))) {
        check(api().event_synchronize(events_[k % 2]), "event_synchronize");
        done += batch;
        break;
      }
    }
    return static_cast<double>(done) / seconds_since(t0);
  }

private:
  const cuda::driver_api& api() const { return ctx_.api(); }
  static void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw std::runtime_error(std::string("bench_cuda_background: ") + what + " failed");
  }
  void launch_batch(int k, int count) {
    for (int i = 0; i < count; ++i) triad_.on(stream_)(x_.span(), y_.span(), n_, 0.5f);
    check(api().event_record(events_[k % 2], stream_), "event_record");
  }

  cuda::device d_;
  const cuda::device_context& ctx_;
  cuda::device_buffer<float> x_, y_;
  int n_;
  triad_tuner triad_;
  CUstream stream_ = nullptr;
  CUevent events_[2] = {nullptr, nullptr};
};

/// The key's operands (16 Mi floats), the tuned kernel's alone.
struct poly_operands {
  cuda::device_buffer<float> x, out;
  int n;
  poly_operands(const cuda::device& d, int size) : x(d, std::vector<float>(std::size_t(size), 0.75f)), out(d, std::size_t(size)), n(size) {}
};

/// A background tuning of the key beside the program: the first call (a stand-in, on the program's
/// stream), then the program's stream runs until the tuning has ended. Returns its result and the
/// program's throughput meanwhile.
std::pair<const cotune::tuning_result*, double> tune_beside(program& prog, poly_tuner& tuner, poly_operands& o) {
  tuner.on(prog.stream())(o.x.span(), o.out.span(), o.n);
  const double rate = prog.run([&](double s) { return s < 1.0 || tuner.background_tunings() > 0; });
  tuner.wait_tuned();
  return {&tuner.tune_now(o.x.span(), o.out.span(), o.n), rate};
}

/// The median a tuning measured for candidate `i` in its full-budget pass (the finals), else in screening.
double median_of(const cotune::candidate_result& c) { return c.time[0]; }
double spread_of(const cotune::candidate_result& c) { return c.time[2] - c.time[1]; }

} // namespace

int main(int argc, char** argv) {
  const auto first = cotune_bench::first_cuda_device("bench_cuda_background");
  if (!first) return 0;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 10;
  const double share_b = argc > 3 ? std::atof(argv[3]) : 0.5;
  const auto start = clock_type::now();
  const cuda::device& d = *first;
  const double share_a = cotune::knobs().autotuning.background_share.get();
  std::printf("bench_cuda_background: %s; (a) at share %.2f (COTUNE_BACKGROUND_SHARE), (b) %d runs at share %.2f\n",
              d.name.c_str(), share_a, runs, share_b);

  program prog(d, 64 << 20);
  poly_operands ops(d, 16 << 20);

  // (a) The program alone, beside a 100-config key tuning in the background, alone again.
  const double alone = prog.run([&](double s) { return s < seconds; });
  const auto tuning_start = clock_type::now();
  poly_tuner a_tuner{{.name = "background_poly", .code = poly_code, .entry = "background_poly"}, poly_configs(),
                     poly_options(cotune::first_call_mode::serve, std::nullopt)};
  const auto [a_result, beside] = tune_beside(prog, a_tuner, ops);
  const double tuning_s = seconds_since(tuning_start);
  const double alone_again = prog.run([&](double s) { return s < seconds; });
  const double ratio = beside / ((alone + alone_again) / 2);
  const auto& bg = a_result->background;
  std::printf("(a) program alone %.1f launches/s; while the key tuned (%.1f s, %zu candidates, %zu pauses %.0f ms, %zu "
              "re-measured, finals repeated %zu) %.1f launches/s; alone again %.1f launches/s\n",
              alone, tuning_s, a_result->candidates.size(), bg.pauses, bg.paused_ms, bg.remeasured, bg.final_repeats,
              beside, alone_again);
  std::printf("(a) throughput while tuning in the background: %.3f of undisturbed (target >= 0.90): %s\n", ratio,
              ratio >= 0.90 ? "MET" : "NOT MET");
  std::printf("FIGURE {\"name\": \"background_throughput_ratio\", \"share\": %.3f, \"ratio\": %.4f, \"alone\": %.1f, "
              "\"beside\": %.1f, \"alone_again\": %.1f, \"tuning_s\": %.2f, \"pauses\": %zu, \"remeasured\": %zu}\n",
              share_a, ratio, alone, beside, alone_again, tuning_s, bg.pauses, bg.remeasured);
  std::fflush(stdout);

  // (b) The background winner (the program running beside it) against the blocking winner (device idle).
  int same = 0, within = 0, done = 0;
  for (int r = 0; r < runs; ++r) {
    if (seconds_since(start) > 400) {
      std::printf("(b) stopped after %d runs: the program's 400 s are spent\n", done);
      break;
    }
    poly_tuner bg_tuner{{.name = "background_poly", .code = poly_code, .entry = "background_poly"}, poly_configs(),
                        poly_options(cotune::first_call_mode::serve, share_b)};
    const auto [bg_result, rate] = tune_beside(prog, bg_tuner, ops);
    poly_tuner blocking{{.name = "background_poly", .code = poly_code, .entry = "background_poly"}, poly_configs(),
                        poly_options(cotune::first_call_mode::wait, std::nullopt)};
    const cotune::tuning_result& blk = blocking.tune_now(ops.x.span(), ops.out.span(), ops.n);
    const auto& w = blk.candidates[blk.winner];
    const std::size_t j = bg_result->winner; // the same candidate list, in the same order
    const auto& b = blk.candidates[j];
    const double gap = median_of(b) / median_of(w) - 1;
    const bool is_same = j == blk.winner;
    // Within the noise the blocking tuning measured: the bands (median +- half the p20-p80 spread) overlap, or 2%.
    const bool is_within = !is_same && b.status == cotune::candidate_status::ok &&
                           (median_of(b) - spread_of(b) / 2 <= median_of(w) + spread_of(w) / 2 || gap <= 0.02);
    same += is_same ? 1 : 0;
    within += is_within ? 1 : 0;
    ++done;
    std::printf("(b) run %d: background {%s} (%zu re-measured, %zu pauses; program %.1f launches/s), blocking {%s}: "
                "%s (background winner %+.2f%% in the blocking tuning, %s)\n",
                r + 1, bg_result->best().text().c_str(), bg_result->background.remeasured,
                bg_result->background.pauses, rate, blk.best().text().c_str(),
                is_same ? "same" : is_within ? "within noise" : "WORSE", 100 * gap,
                b.interleaved ? "both finalists" : b.screened_only ? "screening" : "full budget");
    std::fflush(stdout);
  }
  const bool met = done == runs && same + within == runs;
  std::printf("(b) %d of %d runs: background winner same as blocking (%d) or within noise (%d) (target 10 of 10): %s\n",
              same + within, done, same, within, met ? "MET" : "NOT MET");
  std::printf("FIGURE {\"name\": \"background_winner_agreement\", \"share\": %.3f, \"runs\": %d, \"same\": %d, "
              "\"within_noise\": %d}\n",
              share_b, done, same, within);
  std::printf("bench_cuda_background: %.0f s\n", seconds_since(start));
  return 0;
}
