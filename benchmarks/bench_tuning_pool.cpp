// Figure (b): tuning wall time with the compile pool against compiling one candidate at a time.
//
// Two engines in one run: engine(0) (the compile pool: `autotuning.compile_threads`, else the
// hardware threads) and engine(1) (one compile at a time). Each tunes the same 17-candidate matmul
// as examples/02, with a fresh cache directory and a unique kernel name per tuning, so that no
// binary is ever served from the cache. Runs alternate between the two engines so that both see
// the same machine load, and the medians are compared. A compile-only figure (warmup(), which
// compiles every candidate and measures none) isolates the part the pool speeds up, and the same
// compile commands run directly (no cotune) give the machine's own ceiling for that part.
//
//   build/bench/benchmarks/bench_tuning_pool [--reps=N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/process.hpp>

#include "../examples/cpu_matmul.hpp"

namespace {



using signature = cpu_matmul::signature;
using clock_type = std::chrono::steady_clock;

/// A fresh cache directory, selected through the cache.dir knob and removed afterwards.
struct fresh_cache {
  std::filesystem::path dir = make();
  cotune::knob<std::string>::scope scope{cotune::knobs().cache.dir, dir.string()};
  ~fresh_cache() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::filesystem::path make() {
    char tmpl[] = "/tmp/cotune-bench-pool-XXXXXX";
    if (!::mkdtemp(tmpl)) throw cotune::error("bench_tuning_pool: cannot create a cache directory in /tmp");
    return tmpl;
  }
};

struct sample {
  double tune_ms = 0;     ///< tune_now() wall time: compiles + measurements
  double compile_ms = 0;  ///< warmup() wall time: compiles only
  double serial_sum = 0;  ///< sum of the candidates' own compile times in the tuning
  double raw_ms = 0;      ///< the same compile commands run directly, as many at once as the engine
  std::size_t compiles = 0, cache_hits = 0;
};

/// The machine's own ceiling: the host backend's exact compile commands for every candidate, run
/// directly by `threads` threads with no cotune in between. Returns the wall time in ms.
double raw_compiles(std::size_t threads, const std::vector<cotune::config>& configs) {
  fresh_cache cache; // only a scratch directory here
  const cotune::kernel_source kernel{.name = "matmul_raw", .code = cpu_matmul::matmul_code, .entry = "matmul",
                                     .options = {"-std=c++17"}};
  const auto src = (cache.dir / "matmul_raw.cpp").string();
  {
    std::ofstream f(src);
    f << cpu_matmul::matmul_code;
  }
  const cotune::host_backend backend;
  const auto cc = cotune::resolve_host_compiler();
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < configs.size(); ++i)
    commands.push_back(backend.command(cc, kernel, configs[i], src, (cache.dir / fmt::format("k{}.so", i)).string()));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto t0 = clock_type::now();
  {
    std::vector<std::jthread> workers;
    for (std::size_t t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        for (std::size_t i; (i = next++) < commands.size();)
          if (cotune::detail::run_process(commands[i], std::chrono::minutes(5)).exit_code != 0) failed = true;
      });
  }
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  if (failed) throw cotune::error("bench_tuning_pool: a direct compile of the matmul failed");
  return ms;
}

sample measure(cotune::engine& eng, const std::string& tag, int rep, int n, std::vector<float>& a,
               std::vector<float>& b, std::vector<float>& c) {
  const auto configs = cpu_matmul::configs();
  sample s;
  {
    fresh_cache cache;
    cotune::kernel_source kernel{.name = fmt::format("matmul_{}_tune_{}_{}", tag, rep, ::getpid()),
                                 .code = cpu_matmul::matmul_code, .entry = "matmul", .options = {"-std=c++17"}};
    cotune::autotuner<signature> tuner{
        kernel, configs, {.arg_names = {"A", "B", "C", "n"}, .key = {"n"}, .cache_results = false}, {}, eng};
    const auto t0 = clock_type::now();
    const auto& r = tuner.tune_now(a, b, c, n);
    s.tune_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    s.compiles = tuner.compiles();
    for (const auto& cand : r.candidates) {
      s.serial_sum += cand.compile_ms;
      s.cache_hits += cand.binary_from_cache ? 1 : 0;
    }
  }
  {
    fresh_cache cache;
    cotune::kernel_source kernel{.name = fmt::format("matmul_{}_warmup_{}_{}", tag, rep, ::getpid()),
                                 .code = cpu_matmul::matmul_code, .entry = "matmul", .options = {"-std=c++17"}};
    cotune::autotuner<signature> tuner{
        kernel, configs, {.arg_names = {"A", "B", "C", "n"}, .key = {"n"}, .cache_results = false}, {}, eng};
    const auto t0 = clock_type::now();
    for (const auto& cand : tuner.warmup(a, b, c, n)) s.cache_hits += cand.binary_from_cache ? 1 : 0;
    s.compile_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  }
  s.raw_ms = raw_compiles(eng.compile_threads(), configs);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  f >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

} // namespace

int main(int argc, char** argv) {
  // 5 alternating pairs, about a minute on a quiet 2-core host: other builds share this host, and
  // the median of 5 discards the two pairs they disturb most.
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a.starts_with("--reps=")) reps = std::max(1, std::stoi(std::string(a.substr(7))));
    else {
      std::fprintf(stderr, "usage: %s [--reps=N]\n", argv[0]);
      return 2;
    }
  }
  constexpr int n = 256; // as examples/02
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);

  cotune::engine pool(0), serial(1);
  const auto candidates = cpu_matmul::configs().size();
  (void)cotune::resolve_host_compiler(); // `c++ --version` runs once per process: not in either figure
  const auto bench = cotune::bench_options{cotune::knobs().bench.warmup_ms.get(), cotune::knobs().bench.rep_ms.get()};
  std::printf("figure (b): tuning wall time, compile pool (%zu threads) vs one compile at a time\n",
              pool.compile_threads());
  std::printf("kernel: the %zu-candidate %dx%d matmul of examples/02; fresh cache dir + unique kernel name per "
              "tuning\nbench budgets per candidate: warmup %.0f ms, rep %.0f ms (the bench.* knobs); host: %u "
              "hardware threads, load average %s\n\n",
              candidates, n, n, bench.warmup_ms, bench.rep_ms, std::thread::hardware_concurrency(),
              load_average().c_str());
  std::printf("%-4s %-8s %10s %12s %20s %14s %9s %11s\n", "rep", "engine", "tune ms", "compile ms",
              "sum of compiles ms", "raw c++ ms", "compiles", "cache hits");

  std::vector<double> pool_tune, serial_tune, pool_compile, serial_compile, pool_raw, serial_raw;
  for (int rep = 0; rep < reps; ++rep) {
    // Alternate which engine goes first, so that neither always runs on a warmer (or busier) machine.
    for (int k = 0; k < 2; ++k) {
      const bool use_pool = (k == 0) == (rep % 2 == 0);
      const sample s = measure(use_pool ? pool : serial, use_pool ? "pool" : "serial", rep, n, a, b, c);
      std::printf("%-4d %-8s %10.0f %12.0f %20.0f %14.0f %9zu %11zu\n", rep, use_pool ? "pool" : "serial", s.tune_ms,
                  s.compile_ms, s.serial_sum, s.raw_ms, s.compiles, s.cache_hits);
      std::fflush(stdout);
      (use_pool ? pool_tune : serial_tune).push_back(s.tune_ms);
      (use_pool ? pool_compile : serial_compile).push_back(s.compile_ms);
      (use_pool ? pool_raw : serial_raw).push_back(s.raw_ms);
    }
  }
  const double pt = median(pool_tune), st = median(serial_tune), pc = median(pool_compile), sc = median(serial_compile);
  const double pr = median(pool_raw), sr = median(serial_raw);
  std::printf("\n%-34s %12s %12s %8s\n", fmt::format("median wall time of {} (ms)", reps).c_str(), "pool", "serial",
              "serial/pool");
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "tuning (compile + measure)", pt, st, st / pt);
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "compile phase only (warmup())", pc, sc, sc / pc);
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "raw c++ commands, no cotune", pr, sr, sr / pr);
  std::printf("(the raw row is this machine's ceiling for the compile phase at the time of the run: the\n"
              " same commands, %zu at a time vs one at a time, with no cotune in between)\n",
              pool.compile_threads());
  std::printf("load average after: %s\n", load_average().c_str());
  std::printf("JSON: {\"figure\": \"compile_pool\", \"candidates\": %zu, \"pool_threads\": %zu, \"reps\": %d, "
              "\"tune_ms_pool\": %.1f, \"tune_ms_serial\": %.1f, \"tune_ratio\": %.3f, \"compile_ms_pool\": %.1f, "
              "\"compile_ms_serial\": %.1f, \"compile_ratio\": %.3f, \"raw_ms_parallel\": %.1f, "
              "\"raw_ms_serial\": %.1f, \"raw_ratio\": %.3f}\n",
              candidates, pool.compile_threads(), reps, pt, st, st / pt, pc, sc, sc / pc, pr, sr, sr / pr);
  return 0;
}
