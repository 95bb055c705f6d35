// Benchmark: N concurrent NVRTC compiles of example 04's GEMM, on N threads of this process against N
// compile processes (cotune's default, detail/fork_server.hpp). Needs NVRTC, not a GPU. Each compile
// has a unique kernel name, so that no cache (NVRTC's own included) can serve it.
//
//   bench_cuda_nvrtc_scaling [N...]     default: 1 4 8 16
//
// Prints a table and lines `FIGURE {json}`; see RESULTS.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <cotune/cuda/cuda.hpp>

#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/04_tune_cuda_gemm.cpp"

namespace cuda = cotune::cuda;
using clock_type = std::chrono::steady_clock;

namespace {

int serial = 0;

/// Compiles `n` GEMM candidates at once, one per thread; returns the wall time in ms (or -1 on failure).
double compile_together(int n, bool processes) {
  auto scope = cuda::cuda_knobs().compile_processes.scoped(processes);
  const auto& nv = cuda::nvrtc();
  const auto configs = example04::gemm_configs();
  std::vector<cotune::kernel_source> kernels;
  for (int i = 0; i < n; ++i) kernels.push_back(example04::gemm_kernel(fmt::format("gemm_scaling_{}_{}", ::getpid(), serial++)));
  // The options the CUDA backend itself passes for each config, for an sm_90 device (no GPU needed).
  const cuda::cuda_backend backend(cuda::cuda_backend::options{.preload_nvrtc = false});
  const cuda::device sm90{.ordinal = 0, .cc = {9, 0}, .name = "sm_90"};
  std::vector<int> ok(static_cast<std::size_t>(n), 0);
  std::vector<std::thread> threads;
  const auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      const auto& c = configs[static_cast<std::size_t>(i) % configs.size()];
      const auto& k = kernels[static_cast<std::size_t>(i)];
      auto opts = backend.options_for(k, c, sm90);
      opts.push_back("--include-path=" + nv.toolkit_include_dir().string());
      const auto out = nv.compile(k.code, "gemm.cu", opts, k.entry);
      ok[static_cast<std::size_t>(i)] = out.ok;
      if (!out.ok) std::fprintf(stderr, "compile failed: %s\n%s\n", out.error.c_str(), out.log.c_str());
    });
  for (auto& t : threads) t.join();
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  return std::all_of(ok.begin(), ok.end(), [](int x) { return x != 0; }) ? ms : -1;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, 4, 8, 16};
  if (!cuda::try_nvrtc()) {
    std::printf("no NVRTC: skipping (%s)\n", cuda::nvrtc_error().c_str());
    return 0;
  }
  // One compile each way first: NVRTC's first use in a process, and the compile server's start, are
  // not what is measured.
  if (compile_together(1, false) < 0 || compile_together(1, true) < 0) return 1;
  std::printf("concurrent NVRTC compiles of example 04's GEMM (sm_90), %u hardware threads\n",
              std::thread::hardware_concurrency());
  std::printf("  %4s %16s %18s %8s\n", "N", "threads ms", "processes ms", "ratio");
  for (int n : counts) {
    if (n <= 0) continue;
    const double threads = compile_together(n, false);
    const double processes = compile_together(n, true);
    if (threads < 0 || processes < 0) return 1;
    std::printf("  %4d %16.1f %18.1f %7.2fx\n", n, threads, processes, threads / processes);
    std::printf("FIGURE {\"figure\": \"nvrtc_scaling\", \"n\": %d, \"threads_ms\": %.1f, \"processes_ms\": %.1f, "
                "\"hardware_threads\": %u}\n",
                n, threads, processes, std::thread::hardware_concurrency());
  }
  return 0;
}
