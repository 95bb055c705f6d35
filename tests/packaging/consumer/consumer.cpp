// The program of every packaging test: what a new user writes after getting cotune through
// find_package, add_subdirectory, FetchContent or pkg-config, header-only or compiled once. It tunes
// a small CPU kernel over three configs with the host backend, then calls the tuned kernel and checks
// its answer and that the winner is what ran. Usage: consumer <cache dir>
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
#ifdef CONSUMER_COMPILED_KERNELS
#include <cotune/cuda/compiled_backend.hpp>

// compiled_kernels.cu's, compiled by nvcc.
cotune::cuda::compiled_kernels<void(int*, int)> consumer_kernels();
#endif

// Sums n ints with UNROLL accumulators: every config gives the same answer at a different speed. It
// writes the sum to out[0] and its UNROLL to out[1], which tells which config ran.
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

#ifdef CONSUMER_COMPILED_KERNELS
  {
    // Kernels nvcc compiled into this program, as candidates: tuned where a GPU is, listed everywhere.
    const cotune::cuda::compiled_backend<void(int*, int)> compiled{consumer_kernels()};
    std::printf("consumer: %zu compiled CUDA candidates\n", compiled.configs().size());
    if (compiled.configs().size() != 2) return 1;
    if (const auto devices = cotune::cuda::devices(); !devices.empty()) {
      const int n = 1000;
      cotune::cuda::device_buffer<int> out(devices.front(), n);
      cotune::autotuner<void(cotune::cuda::device_span<int>, int), cotune::cuda::compiled_backend<void(int*, int)>> fill{
          compiled.source("consumer_fill"), compiled.configs(),
          {.arg_names = {"out", "n"},
           .key = {"n"},
           .grid = [](const cotune::config& c, const auto&, const int& count) {
             return cotune::grid(c, cdiv(count, cotune::p("BLOCK")));
           }},
          compiled};
      fill(out, n);
      compiled.synchronize(devices.front());
      const auto best = fill.best_config(out, n)->at("BLOCK").as_int();
      if (out.to_vector().front() != best) return 1;
      std::printf("consumer: compiled candidates tuned, BLOCK %lld\n", static_cast<long long>(best));
    }
  }
#endif

  cotune::kernel_source kernel{.name = "consumer_sum", .code = sum_code, .entry = "sum"};
  const cotune::config one{{"UNROLL", 1}}, two{{"UNROLL", 2}}, four{{"UNROLL", 4}};
  // 1 ms + 2 ms budgets: this checks that the pipeline works, not which config wins.
  cotune::autotuner<void(const int*, int, int*)> tuner{
      kernel, {one, two, four}, {.arg_names = {"x", "n", "out"}, .key = {"n"}, .bench = cotune::bench_options{1.0, 2.0}}};

  std::vector<int> x(1000, 3);
  int out[2] = {0, 0};
  const auto& result = tuner.tune_now(x.data(), static_cast<int>(x.size()), out);
  out[0] = out[1] = 0;
  tuner(x.data(), static_cast<int>(x.size()), out);
  const auto best_unroll = result.best().at("UNROLL").as_int();
  std::printf("consumer: cotune %s (%s), %zu candidates, best {%s}, ran UNROLL %d, sum %d\n", cotune::version,
              COTUNE_HEADER_ONLY ? "header-only" : "separate compilation", result.candidates.size(),
              result.shown(result.best()).c_str(), out[1], out[0]);
  if (result.from_cache) {
    std::fprintf(stderr, "%s: the result came from the cache in %s; this test tunes\n", argv[0], argv[1]);
    return 1;
  }
  for (const auto& c : result.candidates)
    if (c.status != cotune::candidate_status::ok) {
      std::fprintf(stderr, "consumer: candidate {%s} failed: %s\n", result.shown(c.cfg).c_str(), c.reason.c_str());
      return 1;
    }
  if (out[1] != best_unroll) {
    std::fprintf(stderr, "consumer: the tuned call ran UNROLL %d, not the winner's %lld\n", out[1],
                 static_cast<long long>(best_unroll));
    return 1;
  }
  return out[0] == 3000 && result.candidates.size() == 3 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "consumer: %s\n", e.what());
  return 1;
}
