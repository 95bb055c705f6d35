// Conan's test package: the headers compile against the packaged dependencies, the program links, and
// it tunes a small CPU kernel over three configs with the host backend (which compiles each config
// with the C++ compiler found at run time), then calls the tuned kernel and checks its answer and that
// the winner is what ran. Usage: test_package <cache dir>
#include <cstdio>
#include <exception>
#include <vector>

#include <cotune/cotune.hpp>
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis.hpp>
#endif
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda.hpp>
#endif

// Sums n ints with UNROLL accumulators into out[0]; writes its UNROLL to out[1], which tells which
// config ran.
static const char* sum_code = R"(
extern "C" void sum(const int* x, int n, int* out) {
  int acc[UNROLL] = {};
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) acc[u] += x[i + u];
  int total = 0;
  for (; i < n; ++i) total += x[i];
  for (int u = 0; u < UNROLL; ++u) total += acc[u];
  out[0] = total;
  out[1] = UNROLL;
}
)";

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_package <cache dir>\n");
    return 2;
  }
  cotune::knobs().cache.dir.set(argv[1]);
#ifdef COTUNE_HAS_REDIS
  std::printf("redis module: key prefix %s\n", cotune::redis::redis_knobs().prefix.get().c_str());
#endif
#ifdef COTUNE_HAS_CUDA
  std::printf("cuda module: %s\n", cotune::cuda::availability().text().c_str());
#endif
  cotune::kernel_source kernel{.name = "test_package_sum", .code = sum_code, .entry = "sum"};
  // 1 ms + 2 ms budgets: this checks that the pipeline works, not which config wins.
  cotune::autotuner<void(const int*, int, int*)> tuner{
      kernel,
      {cotune::config{{"UNROLL", 1}}, cotune::config{{"UNROLL", 2}}, cotune::config{{"UNROLL", 4}}},
      {.arg_names = {"x", "n", "out"}, .key = {"n"}, .bench = cotune::bench_options{1.0, 2.0}}};
  std::vector<int> x(1000, 3);
  int out[2] = {0, 0};
  const auto& result = tuner.tune_now(x.data(), static_cast<int>(x.size()), out);
  out[0] = out[1] = 0;
  tuner(x.data(), static_cast<int>(x.size()), out);
  const auto winner = result.best().at("UNROLL").as_int();
  std::printf("cotune %s (%s): tuned %zu configs, best {%s}, ran UNROLL %d, sum %d\n", cotune::version,
              COTUNE_HEADER_ONLY ? "header-only" : "compiled", result.candidates.size(),
              result.shown(result.best()).c_str(), out[1], out[0]);
  if (result.from_cache) {
    std::fprintf(stderr, "%s: the result came from the cache in %s; this test tunes\n", argv[0], argv[1]);
    return 1;
  }
  for (const auto& c : result.candidates)
    if (c.status != cotune::candidate_status::ok) {
      std::fprintf(stderr, "test_package: config {%s} failed: %s\n", result.shown(c.cfg).c_str(), c.reason.c_str());
      return 1;
    }
  return out[1] == winner && out[0] == 3000 && result.candidates.size() == 3 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "test_package: %s\n", e.what());
  return 1;
}
