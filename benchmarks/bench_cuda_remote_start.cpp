// S4 (issue 16, item 3): a warm start from Redis on the GPU, beside S3 (the warm start from the local
// disk) in the same run. S4 is a new process whose tuning result and winner's cubin are only in Redis
// (its local cache is empty), from context ready to the first tuned launch; target: at most 10 ms, and
// within 2x of S3.
//
//   bench_cuda_remote_start [processes=10] [size=1024]
//
// One run, against a real redis-server on loopback started here (as bench_redis_remote's R1 does):
//   1. a cold child tunes 8 of example 04's GEMM candidates (square tiles) on M = N = K = size, with
//      cotune::redis::remote_cache: the result, the winner's cubin beside it (its companion) and every
//      cubin go to Redis and to the child's local cache A;
//   2. then, `processes` times, alternately: an S4 child (remote_cache, a new empty local cache) and
//      an S3 child (file_cache on local cache A, no Redis).
// Every child takes the timing points of bench_cuda_tuning's `warm` mode (S3): the context created and
// the operands on the device, a synchronize, then t0; the tuner constructed and its first call
// returned (the launch issued) is `first_launch_ms`; a synchronize after it, `first_done_ms`. The
// kernel is named after this run (gemm_s4_PID_TIME), so no earlier cache can serve it. Each child
// checks 64 sampled entries of C (zeroed before t0) against double-precision dot products and says so.
//
// redis-server: $COTUNE_REDIS_SERVER (a path) if set, else the first on PATH, else one beside this
// program (gpu-bundle copies every program into one bin/ folder). Children are /proc/self/exe, so they
// inherit the library path of the bundle's `run` wrapper. Prints a table and lines `FIGURE {json}`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/04_tune_cuda_gemm.cpp"

#ifdef COTUNE_HAS_REDIS
#include <cotune/core/json_writer.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/redis/redis.hpp>

#include "../tests/redis/redis_server.hpp"
#include "../tests/support/temp_dir.hpp"
#endif

#include "cuda_device.hpp"

namespace {

using namespace example04;
using clock_type = std::chrono::steady_clock;

#ifdef COTUNE_HAS_REDIS

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// 8 of example 04's 16 candidates (the square block tiles): a cold tuning of a few seconds.
std::vector<cotune::config> s4_configs() {
  std::vector<cotune::config> out;
  for (const auto& c : gemm_configs())
    if (cotune::eval(cotune::p("BLOCK_M"), c) == cotune::eval(cotune::p("BLOCK_N"), c)) out.push_back(c);
  return out;
}

/// 64 sampled entries of C against double-precision dot products of the fp16 inputs (as
/// bench_cuda_tuning's check); C was zeroed before the tuned launch, so an unwritten C fails.
bool check_sampled(const std::vector<float>& c, const std::vector<cuda::float16>& ha,
                   const std::vector<cuda::float16>& hb, std::size_t n, double& max_rel) {
  std::mt19937 rng(7);
  double max_ref = 0, max_err = 0;
  for (int s = 0; s < 64; ++s) {
    const std::size_t i = rng() % n, j = rng() % n;
    double ref = 0;
    for (std::size_t k = 0; k < n; ++k) ref += double(float(ha[i * n + k])) * double(float(hb[k * n + j]));
    max_ref = std::max(max_ref, std::fabs(ref));
    max_err = std::max(max_err, std::fabs(ref - double(c[i * n + j])));
  }
  max_rel = max_err / std::max(max_ref, 1e-30);
  return max_rel < 1e-3;
}

/// One child: a new process that makes its context, puts its operands on the device and then calls
/// the tuner once. Prints one line `RESULT ...` for the parent (and `DEVICE name`).
/// cold: tunes and publishes (Cache = remote_cache); remote: S4; local: S3 (Cache = file_cache).
template <class Cache>
int child(const std::string& mode, const std::string& kernel_name, int size) {
  cuda::cuda_backend backend; // first, as in S3: NVRTC opens in the background as the driver starts
  const auto first = cotune_bench::first_cuda_device("bench_cuda_remote_start");
  if (!first) return 3;
  const cuda::device& d = *first;
  const auto t_ctx0 = clock_type::now();
  (void)cuda::driver().context(d.ordinal);
  const double context_ms = ms_since(t_ctx0);
  const std::size_t n = static_cast<std::size_t>(size);
  const auto ha = random_halves(n * n, 1), hb = random_halves(n * n, 2);
  cuda::device_buffer<cuda::float16> da(d, ha), db(d, hb);
  cuda::device_buffer<float> dc(d, n * n);
  dc.zero();
  // Plain variables, not a structured binding: clang 14 cannot capture bindings in lambdas.
  const A_span a = da.span(), b = db.span();
  const C_span c = dc.span();
  const int m = size, nn = size, k = size;

  // Context ready and the user's data on the device: from here to the first tuned launch (S3's points).
  backend.synchronize(d);
  const auto t0 = clock_type::now();
  cotune::autotuner<gemm_signature, cuda::cuda_backend, cuda::cuda_benchmarker, Cache> tuner{
      gemm_kernel(kernel_name), s4_configs(), gemm_options(), backend};
  tuner(a, b, c, m, nn, k);
  const double first_launch_ms = ms_since(t0);
  backend.synchronize(d);
  const double first_done_ms = ms_since(t0);

  unsigned long long round_trips = 0, connects = 0, remote_hits = 0;
  if constexpr (!std::is_same_v<Cache, cotune::file_cache>) {
    const auto s = cotune::redis::redis_backend::shared().stats();
    round_trips = s.round_trips;
    connects = s.connects;
    remote_hits = s.hits;
  }
  const auto compilations = static_cast<unsigned long long>(cuda::nvrtc().compilations());
  double max_rel = 0;
  const bool correct = check_sampled(dc.to_vector(), ha, hb, n, max_rel);
  // After the figures: the background fill of the local cache from the remote hit, finished and counted.
  (void)cotune::wait_for_local_fills(std::chrono::seconds(10));
  const auto fills = cotune::local_fills();
  const cotune::config* best = tuner.best_config(a, b, c, m, nn, k);
  const std::string winner = best ? best->text() : "none";
  const bool warm_ok = tuner.cached_tunings() == 1 && tuner.measured_tunings() == 0 && compilations == 0;
  std::printf("DEVICE %s\n", backend.device_name(d).c_str());
  std::printf("%s child: first tuned launch %.3f ms after the context was ready (%.3f ms with the kernel done); "
              "sampled check of C: max rel error %.2e -> %s; winner {%s}\n",
              mode.c_str(), first_launch_ms, first_done_ms, max_rel, correct ? "OK" : "WRONG", winner.c_str());
  std::printf("RESULT context_ms=%.3f first_launch_ms=%.4f first_done_ms=%.4f round_trips=%llu connects=%llu "
              "remote_hits=%llu compilations=%llu cached=%zu measured=%zu fills_done=%llu correct=%d "
              "max_rel=%.3e\n",
              context_ms, first_launch_ms, first_done_ms, round_trips, connects, remote_hits, compilations,
              tuner.cached_tunings(), tuner.measured_tunings(), static_cast<unsigned long long>(fills.done),
              correct ? 1 : 0, max_rel);
  if (!correct) return 1;
  return mode == "cold" || warm_ok ? 0 : 1;
}

/// What the parent read from one child.
struct sample {
  bool ok = false;
  double context_ms = 0, first_launch_ms = 0, first_done_ms = 0, max_rel = 0;
  unsigned long long round_trips = 0, connects = 0, remote_hits = 0, compilations = 0, fills_done = 0;
  std::size_t cached = 0, measured = 0;
  int correct = 0;
  std::string device;
};

sample run_child(const std::string& mode, const std::filesystem::path& local_dir, const std::string& url,
                 const std::string& kernel, int size) {
  const auto limit = mode == "cold" ? std::chrono::minutes(5) : std::chrono::minutes(2);
  auto r = cotune::detail::run_process(
      {"/proc/self/exe", "--child", mode, local_dir.string(), url, kernel, std::to_string(size)}, limit);
  sample s;
  const auto at = r.output.find("RESULT ");
  const bool parsed =
      at != std::string::npos &&
      std::sscanf(r.output.c_str() + at,
                  "RESULT context_ms=%lf first_launch_ms=%lf first_done_ms=%lf round_trips=%llu connects=%llu "
                  "remote_hits=%llu compilations=%llu cached=%zu measured=%zu fills_done=%llu correct=%d "
                  "max_rel=%lf",
                  &s.context_ms, &s.first_launch_ms, &s.first_done_ms, &s.round_trips, &s.connects, &s.remote_hits,
                  &s.compilations, &s.cached, &s.measured, &s.fills_done, &s.correct, &s.max_rel) == 12;
  if (const auto dev = r.output.find("DEVICE "); dev != std::string::npos)
    s.device = r.output.substr(dev + 7, r.output.find('\n', dev) - dev - 7);
  s.ok = parsed && r.exit_code == 0;
  if (!s.ok)
    std::fprintf(stderr, "%s child failed (exit %d%s):\n%s\n", mode.c_str(), r.exit_code,
                 r.timed_out ? ", timed out" : "", r.output.c_str());
  return s;
}

/// The median (the mean of the two middle values for an even count).
double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
/// The q-quantile by nearest rank (p90 of 10 values is the 9th smallest; q = 0 the least, q = 1 the greatest).
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

/// One side's samples: its timings, with the failed children left out (and counted).
struct side {
  std::vector<double> first_launch, first_done, context;
  std::vector<unsigned long long> round_trips;
  int failed = 0, correct = 0;
  unsigned long long compilations = 0, max_connects = 0, max_remote_hits = 0, max_fills = 0;
  void add(const sample& s) {
    correct += s.correct;
    compilations += s.compilations;
    if (!s.ok) {
      ++failed;
      return;
    }
    first_launch.push_back(s.first_launch_ms);
    first_done.push_back(s.first_done_ms);
    context.push_back(s.context_ms);
    round_trips.push_back(s.round_trips);
    max_connects = std::max(max_connects, s.connects);
    max_remote_hits = std::max(max_remote_hits, s.remote_hits);
    max_fills = std::max(max_fills, s.fills_done);
  }
};

/// Lets cotune_test::redis_server (which looks on PATH) find the server to use: COTUNE_REDIS_SERVER
/// through a link named redis-server in `links` (the server reads its role from its name: Debian's
/// redis-server is a link to redis-check-rdb), else PATH, else the folder of this program.
void point_path_at_redis_server(const std::filesystem::path& links) {
  namespace fs = std::filesystem;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  if (const char* e = std::getenv("COTUNE_REDIS_SERVER"); e && *e) {
    const fs::path exe = fs::absolute(e);
    if (::access(exe.c_str(), X_OK) != 0)
      throw std::runtime_error(fmt::format("COTUNE_REDIS_SERVER={}: not an executable file; give the path of a "
                                           "redis-server binary (or unset it to use the one on PATH)", e));
    fs::create_symlink(exe, links / "redis-server");
    path = links.string() + (path.empty() ? "" : ":" + path);
  } else {
    path += (path.empty() ? "" : ":") + fs::read_symlink("/proc/self/exe").parent_path().string();
  }
  ::setenv("PATH", path.c_str(), 1);
}

/// "7.0.15 at /usr/bin/redis-check-rdb": the version the server reports and the binary it runs.
std::string describe_server(const cotune_test::redis_server& server) {
  std::string version = "?";
  auto info = server.client()({"INFO", "server"});
  if (const auto at = info.str.find("redis_version:"); at != std::string::npos)
    version = info.str.substr(at + 14, info.str.find_first_of("\r\n", at) - at - 14);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", server.pid()), ec);
  return fmt::format("{} at {}", version, ec ? "?" : exe.string());
}

/// One side's figures: counts, the p50 and p90 of each timing, and every first launch in order.
void add_side(cotune::json_writer& w, const side& s) {
  w.field("processes", s.first_launch.size()).field("failed", s.failed).field("correct_children", s.correct);
  w.field("first_launch_ms_p50", median(s.first_launch)).field("first_launch_ms_p90", quantile(s.first_launch, 0.9));
  w.field("first_done_ms_p50", median(s.first_done)).field("first_done_ms_p90", quantile(s.first_done, 0.9));
  w.field("context_ms_p50", median(s.context)).key("first_launch_ms").begin_array();
  for (double ms : s.first_launch) w.value(ms);
  w.end_array();
}

int parent(int processes, int size) {
  if (!cotune_bench::first_cuda_device("bench_cuda_remote_start")) return 0;
  cotune_test::temp_dir root("cotune-bench-s4");
  std::filesystem::create_directory(root / "bin");
  point_path_at_redis_server(root / "bin");
  cotune_test::redis_server server;
  const std::string url = server.url();
  const std::string kernel = fmt::format("gemm_s4_{}_{}", ::getpid(), std::time(nullptr));
  const std::string problem = fmt::format("{0}x{0}x{0} fp16 GEMM, {1} candidates", size, s4_configs().size());
  std::printf("S4 warm start from Redis beside S3 from the local disk: %s, kernel %s; redis-server %s, %s\n",
              problem.c_str(), kernel.c_str(), describe_server(server).c_str(), url.c_str());
  std::fflush(stdout);

  const auto local_a = root / "local-a";
  const auto t_cold = clock_type::now();
  const sample cold = run_child("cold", local_a, url, kernel, size);
  const double cold_wall_ms = ms_since(t_cold);
  std::size_t keys = 0, companions = 0;
  {
    auto client = server.client();
    keys = client({"KEYS", "*"}).elements.size();
    companions = client({"KEYS", "*__companion__*"}).elements.size();
  }
  std::printf("cold child (tunes, publishes to Redis and local cache A): %s, tuned and first call done %.1f ms "
              "after the context (process %.1f ms); Redis now holds %zu keys, %zu of them companions\n",
              cold.ok ? "ok" : "FAILED", cold.first_done_ms, cold_wall_ms, keys, companions);
  std::fflush(stdout);
  if (!cold.ok || keys == 0) {
    std::fprintf(stderr, "bench_cuda_remote_start: the cold child %s, so nothing is in Redis to start from\n",
                 cold.ok ? "published nothing to Redis" : "failed");
    return 1;
  }
  if (companions == 0) {
    std::printf("warning: no companion in Redis: S4 below is the two-step path (result, then the cubin)\n");
    std::fflush(stdout);
  }

  side s4, s3;
  for (int i = 0; i < processes; ++i) {
    s4.add(run_child("remote", root / fmt::format("empty{}", i), url, kernel, size));
    s3.add(run_child("local", local_a, "-", kernel, size));
  }

  const double s4_p50 = median(s4.first_launch);
  const double ratio = s4_p50 / median(s3.first_launch);
  std::vector<double> trips(s4.round_trips.begin(), s4.round_trips.end());
  const unsigned long long trips_max =
      s4.round_trips.empty() ? 0 : *std::max_element(s4.round_trips.begin(), s4.round_trips.end());
  const bool within_target = s4_p50 <= 10.0, within_2x = ratio <= 2.0;
  const int total = 2 * processes;
  const int correct = s4.correct + s3.correct;

  std::printf("\non %s, %d new processes each, alternating (ms; medians; p90 by nearest rank):\n",
              cold.device.c_str(), processes);
  std::printf("  %-62s %9s %9s %9s %9s\n", "", "p50", "p90", "min", "max");
  auto row = [](const char* what, const std::vector<double>& v) {
    std::printf("  %-62s %9.3f %9.3f %9.3f %9.3f\n", what, median(v), quantile(v, 0.9), quantile(v, 0), quantile(v, 1));
  };
  row("S4 Redis only: context ready -> first tuned launch issued", s4.first_launch);
  row("S4             context ready -> first tuned kernel done", s4.first_done);
  row("S3 local disk: context ready -> first tuned launch issued", s3.first_launch);
  row("S3             context ready -> first tuned kernel done", s3.first_done);
  row("context creation, S4 children (not counted)", s4.context);
  row("context creation, S3 children (not counted)", s3.context);
  std::printf("  S4/S3 (p50): %.2fx; S4 p50 <= 10 ms: %s; S4 within 2x of S3: %s\n", ratio,
              within_target ? "yes" : "NO", within_2x ? "yes" : "NO");
  std::printf("  Redis round trips per S4 child: p50 %.0f, max %llu (at most %llu connection(s) and %llu value(s) "
              "fetched; local cache fills after the launch: at most %llu)\n",
              median(trips), trips_max, s4.max_connects, s4.max_remote_hits, s4.max_fills);
  std::printf("  first launches in order (ms): S4 %s; S3 %s\n",
              fmt::format("{:.3f}", fmt::join(s4.first_launch, " ")).c_str(),
              fmt::format("{:.3f}", fmt::join(s3.first_launch, " ")).c_str());
  std::printf("  NVRTC compilations in warm children: %llu; failed children: S4 %d, S3 %d; tuned output correct "
              "in %d of %d warm children\n",
              s4.compilations + s3.compilations, s4.failed, s3.failed, correct, total);

  auto figure = [&](const char* mode) {
    cotune::json_writer w;
    w.begin_object().field("figure", "S4").field("side", "cotune").field("mode", mode).field("device", cold.device);
    w.field("size", size).field("candidates", s4_configs().size());
    return w;
  };
  auto print = [](cotune::json_writer& w) { std::printf("FIGURE %s\n", w.end_object().str().c_str()); };
  auto cold_fig = figure("cold");
  cold_fig.field("first_done_ms", cold.first_done_ms).field("process_ms", cold_wall_ms).field("redis_keys", keys);
  cold_fig.field("companions", companions).field("correct", cold.correct == 1);
  print(cold_fig);
  auto s3_fig = figure("local_disk_s3");
  add_side(s3_fig, s3);
  print(s3_fig);
  auto s4_fig = figure("redis_only");
  add_side(s4_fig, s4);
  s4_fig.field("round_trips_p50", median(trips)).field("round_trips_max", trips_max).field("ratio_to_s3", ratio);
  s4_fig.field("target_ms", 10).field("within_target", within_target).field("within_2x", within_2x);
  print(s4_fig);
  std::fflush(stdout);
  return s4.failed == 0 && s3.failed == 0 && correct == total ? 0 : 1;
}

#endif // COTUNE_HAS_REDIS

} // namespace

int main(int argc, char** argv) {
#ifdef COTUNE_HAS_REDIS
  if (argc == 7 && std::string(argv[1]) == "--child") {
    const std::string mode = argv[2];
    try {
      cotune::knobs().cache.dir.set(argv[3]);
      const int size = std::atoi(argv[6]);
      if (mode == "local") return child<cotune::file_cache>(mode, argv[5], size);
      cotune::redis::redis_knobs().url.set(argv[4]);
      return child<cotune::redis::remote_cache>(mode, argv[5], size);
    } catch (const std::exception& e) {
      std::printf("%s child: %s\n", mode.c_str(), e.what());
      return 1;
    }
  }
  const int processes = argc > 1 ? std::atoi(argv[1]) : 10;
  const int size = argc > 2 ? std::atoi(argv[2]) : 1024;
  if (processes <= 0 || size <= 0 || size % 128 != 0) {
    std::fprintf(stderr, "usage: bench_cuda_remote_start [processes=10] [size=1024, a multiple of 128]\n");
    return 2;
  }
  try {
    return parent(processes, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_remote_start: %s\n", e.what());
    return 1;
  }
#else
  (void)argc;
  (void)argv;
  std::printf("bench_cuda_remote_start: built without cotune::redis (hiredis): skipping\n");
  return 0;
#endif
}
