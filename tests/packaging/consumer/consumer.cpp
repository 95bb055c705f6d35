// The program of every packaging test: what a new user writes after getting cotune through
// find_package, add_subdirectory or FetchContent. It tunes a trivial CPU kernel with the host backend
// and checks the tuned kernel's answer. Usage: consumer <cache dir>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis.hpp>
#endif
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda.hpp>
#endif

// Sums n ints with UNROLL accumulators: every config gives the same answer at a different speed.
static const char* sum_code = R"(
extern "C" void sum(const int* x, int n, int* out) {
  int acc[UNROLL] = {};
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) acc[u] += x[i + u];
  int total = 0;
  for (; i < n; ++i) total += x[i];
  for (int u = 0; u < UNROLL; ++u) total += acc[u];
  *out = total;
}
)";

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer <cache dir>\n");
    return 2;
  }
  cotune::knobs().cache.dir.set(argv[1]);
#ifdef CONSUMER_EXPECTED_VERSION
  if (std::string(cotune::version) != CONSUMER_EXPECTED_VERSION) {
    std::fprintf(stderr, "consumer: got cotune %s, expected %s\n", cotune::version, CONSUMER_EXPECTED_VERSION);
    return 1;
  }
#endif
  // The optional modules, when linked: their headers compile here and their knobs read.
#ifdef COTUNE_HAS_REDIS
  std::printf("consumer: redis module, key prefix %s\n", cotune::redis::redis_knobs().prefix.get().c_str());
#endif
#ifdef COTUNE_HAS_CUDA
  std::printf("consumer: cuda module, graph replay %s\n", cotune::cuda::cuda_knobs().graph.get() ? "on" : "off");
#endif

  cotune::kernel_source kernel{.name = "consumer_sum", .code = sum_code, .entry = "sum"};
  const cotune::config one{{"UNROLL", 1}}, four{{"UNROLL", 4}};
  // 1 ms + 2 ms budgets: this checks that the pipeline works, not which config wins.
  cotune::autotuner<void(const int*, int, int*)> tuner{
      kernel, {one, four}, {.arg_names = {"x", "n", "out"}, .key = {"n"}, .bench = cotune::bench_options{1.0, 2.0}}};

  std::vector<int> x(1000, 3);
  int out = 0;
  const auto& result = tuner.tune_now(x.data(), static_cast<int>(x.size()), &out);
  tuner(x.data(), static_cast<int>(x.size()), &out);
  std::printf("consumer: cotune %s (%s), %zu candidates, best {%s}, sum %d\n", cotune::version,
              COTUNE_HEADER_ONLY ? "header-only" : "separate compilation", result.candidates.size(),
              result.shown(result.best()).c_str(), out);
  for (const auto& c : result.candidates)
    if (c.status != cotune::candidate_status::ok) {
      std::fprintf(stderr, "consumer: candidate {%s} failed: %s\n", result.shown(c.cfg).c_str(), c.reason.c_str());
      return 1;
    }
  return out == 3000 && result.candidates.size() == 2 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "consumer: %s\n", e.what());
  return 1;
}
