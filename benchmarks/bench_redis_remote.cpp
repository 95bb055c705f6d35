// Figures for the Redis remote cache (issue 5), all in one run against a real redis-server on loopback:
//  R1  a new process with an EMPTY local cache, results + binaries in Redis: ms from main() to the first
//      tuned call done, and Redis round trips for that kernel; beside it, the same process with results
//      + binaries on the local disk, the cold (tuning) process, and (the two-step fallback) a new process
//      whose result has no companion beside it.
//  R2  the cost of a Redis outage to a tuning run: a server frozen with SIGSTOP (connects succeed,
//      commands never answer) against no remote cache at all; the difference should be one operation
//      timeout in total, however many cache lookups the run makes.
// Usage: bench_redis_remote [processes=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/redis/redis.hpp>

#include "../tests/redis/redis_server.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
const auto process_start = clock_type::now();

const char* code = R"(
extern "C" void remote_work(int* out, int n) {
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";

template <class Cache>
using tuner_t = cotune::autotuner<void(int*, int), cotune::host_backend, cotune::host_benchmarker, Cache>;

std::vector<cotune::config> configs() {
  std::vector<cotune::config> out;
  for (int c : {8, 1, 4, 2, 6, 3, 5, 7}) out.push_back(cotune::config{{"COST", c}});
  return out;
}

template <class Cache>
int child_tune(const char* kernel_name) {
  tuner_t<Cache> tuner{{.name = kernel_name, .code = code, .entry = "remote_work"},
                       configs(),
                       {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true,
                        .bench = cotune::bench_options{.warmup_ms = 2, .rep_ms = 10}}};
  int out = 0;
  tuner(&out, 2000);
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - process_start).count();
  unsigned long long trips = 0;
  if constexpr (!std::is_same_v<Cache, cotune::file_cache>) trips = cotune::redis::redis_backend::shared().stats().round_trips;
  std::printf("ms=%.3f round_trips=%llu measured=%zu cached=%zu\n", ms, trips, tuner.measured_tunings(),
              tuner.cached_tunings());
  return 0;
}

struct sample {
  double ms = 0;
  unsigned long long trips = 0;
  std::string raw;
};

sample run_child(const std::string& mode, const std::string& local_dir, const std::string& url, const std::string& kernel) {
  auto r = cotune::detail::run_process({"/proc/self/exe", "--child", mode, local_dir, url, kernel}, std::chrono::minutes(5));
  sample s;
  s.raw = r.output;
  std::sscanf(r.output.c_str(), "ms=%lf round_trips=%llu", &s.ms, &s.trips);
  if (r.exit_code != 0) std::fprintf(stderr, "child failed (%d): %s\n", r.exit_code, r.output.c_str());
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  if (argc >= 6 && std::string(argv[1]) == "--child") {
    const std::string mode = argv[2];
    cotune::knobs().cache.dir.set(argv[3]);
    cotune::redis::redis_knobs().url.set(argv[4]);
    if (mode == "remote") return child_tune<cotune::redis::remote_cache>(argv[5]);
    return child_tune<cotune::file_cache>(argv[5]);
  }
  const int processes = argc > 1 ? std::atoi(argv[1]) : 10;
  cotune_test::redis_server server;
  cotune_test::temp_dir root("cotune-bench-redis");
  const std::string kernel = fmt::format("remote_work_{}", ::getpid()); // unique: no earlier cache can help

  // R1: cold tuning with Redis, then fresh processes with empty local caches, then with a warm local disk.
  auto cold = run_child("remote", (root.path() / "cold").string(), server.url(), kernel);
  std::vector<double> remote_ms, local_ms;
  unsigned long long trips = 0;
  for (int i = 0; i < processes; ++i) {
    auto s = run_child("remote", (root.path() / fmt::format("empty{}", i)).string(), server.url(), kernel);
    remote_ms.push_back(s.ms);
    trips = std::max(trips, s.trips);
  }
  for (int i = 0; i < processes; ++i)
    local_ms.push_back(run_child("file", (root.path() / "cold").string(), server.url(), kernel).ms);
  // The same with the winner's binary no longer beside the result (an older writer, an eviction):
  // the two-step path, result then binary.
  {
    auto client = server.client();
    auto found = client({"KEYS", "*:__companion__*"});
    for (const auto& k : found.elements) (void)client({"DEL", k.str});
  }
  std::vector<double> fallback_ms;
  unsigned long long fallback_trips = 0;
  for (int i = 0; i < processes; ++i) {
    auto s = run_child("remote", (root.path() / fmt::format("fallback{}", i)).string(), server.url(), kernel);
    fallback_ms.push_back(s.ms);
    fallback_trips = std::max(fallback_trips, s.trips);
  }
  std::printf("R1 remote warm start (%d new processes, empty local cache, results + binaries in Redis on loopback)\n",
              processes);
  std::printf("   cold tuning process, main() to first tuned call: %9.2f ms\n", cold.ms);
  std::printf("   from Redis, empty local cache (median):          %9.2f ms   round trips for the kernel: %llu\n",
              median(remote_ms), trips);
  std::printf("   from the local disk (median):                    %9.2f ms\n", median(local_ms));
  std::printf("   from Redis without the companion (median):       %9.2f ms   round trips for the kernel: %llu\n",
              median(fallback_ms), fallback_trips);
  std::printf("   ratio Redis/local disk: %.2fx; cold/Redis: %.1fx\n", median(remote_ms) / median(local_ms),
              cold.ms / median(remote_ms));

  // R2: outage. A frozen server accepts connections but never answers.
  const std::string kernel2 = kernel + "_outage";
  auto baseline = run_child("file", (root.path() / "nofile").string(), server.url(), kernel2 + "_a");
  server.freeze();
  auto frozen = run_child("remote", (root.path() / "frozen").string(), server.url(), kernel2 + "_b");
  server.resume();
  std::printf("R2 Redis outage (server frozen by SIGSTOP; COTUNE_REDIS_TIMEOUT_MS=%lld)\n",
              static_cast<long long>(cotune::redis::redis_knobs().timeout_ms.get()));
  std::printf("   tuning run without a remote cache: %9.2f ms\n", baseline.ms);
  std::printf("   tuning run with the frozen Redis:  %9.2f ms   (+%.0f ms = %.2f operation timeouts)\n", frozen.ms,
              frozen.ms - baseline.ms,
              (frozen.ms - baseline.ms) / static_cast<double>(cotune::redis::redis_knobs().timeout_ms.get()));
  std::printf("{\"remote_warm_ms\": %.3f, \"local_warm_ms\": %.3f, \"cold_ms\": %.3f, \"round_trips\": %llu, "
              "\"fallback_ms\": %.3f, \"fallback_round_trips\": %llu, \"outage_extra_ms\": %.3f}\n",
              median(remote_ms), median(local_ms), cold.ms, trips, median(fallback_ms), fallback_trips,
              frozen.ms - baseline.ms);
}
