// 04: tune a tiled CUDA GEMM, C = A x B with fp16 inputs and fp32 accumulation on tensor cores.
// Block tile (BLOCK_M x BLOCK_N, stepping BLOCK_K), warps per block and pipeline stages are the
// parameters: 16 candidates. The autotuner compiles them concurrently with NVRTC, times each on the
// GPU as soon as it is compiled, prints the table and the winner; the winner's output is then checked
// against a CPU fp32 reference. With several identical GPUs the candidate list is split across them.
// Run it twice: the second run reads the result and the winner's cubin from the disk cache and
// compiles nothing. Without a GPU it says so and exits 0.
//
//   04_tune_cuda_gemm [size]     M = N = K = size (default 1024; a multiple of 128)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>

namespace cuda = cotune::cuda;

namespace example04 {

// A multi-stage tensor-core GEMM: each block computes a BLOCK_M x BLOCK_N tile of C; its warps form
// a WARPS_M x 2 grid, each warp holding (WM / 16) x (WN / 16) accumulator fragments. Tiles of A and B
// stream through COTUNE_NUM_STAGES shared-memory buffers with cp.async, so loads of the next tiles
// overlap the current tile's math. Rows of the buffers are padded by 8 halves against bank conflicts.
// M, N and K must be multiples of the block tile (the tuner's early prune keeps only such configs).
inline const char* gemm_code = R"(
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

constexpr int THREADS = COTUNE_NUM_WARPS * 32;
constexpr int STAGES = COTUNE_NUM_STAGES;
constexpr int WARPS_N = 2;
constexpr int WARPS_M = COTUNE_NUM_WARPS / WARPS_N;
constexpr int WM = BLOCK_M / WARPS_M;
constexpr int WN = BLOCK_N / WARPS_N;
constexpr int FM = WM / 16;
constexpr int FN = WN / 16;
constexpr int A_LD = BLOCK_K + 8;
constexpr int B_LD = BLOCK_N + 8;
constexpr int A_TILE = BLOCK_M * A_LD;
constexpr int B_TILE = BLOCK_K * B_LD;
static_assert(STAGES >= 2, "the pipeline needs at least 2 stages");
static_assert(WM % 16 == 0 && WN % 16 == 0 && BLOCK_K % 16 == 0, "warp tiles must be multiples of 16x16x16");

__device__ __forceinline__ void copy16(void* shared, const void* global) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(global));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_fp16(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* As = reinterpret_cast<__half*>(smem);
  __half* Bs = As + STAGES * A_TILE;
  const int bm = blockIdx.y * BLOCK_M, bn = blockIdx.x * BLOCK_N;
  const int warp = threadIdx.x / 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

  auto load_tiles = [&](int stage, int k0) {
    __half* as = As + stage * A_TILE;
    __half* bs = Bs + stage * B_TILE;
    for (int c = threadIdx.x; c < BLOCK_M * BLOCK_K / 8; c += THREADS) {
      const int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
      copy16(as + r * A_LD + col, A + (size_t)(bm + r) * K + k0 + col);
    }
    for (int c = threadIdx.x; c < BLOCK_K * BLOCK_N / 8; c += THREADS) {
      const int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
      copy16(bs + r * B_LD + col, B + (size_t)(k0 + r) * N + bn + col);
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int tiles = K / BLOCK_K;
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load_tiles(s, s * BLOCK_K);
    commit();
  }
  for (int t = 0; t < tiles; ++t) {
    wait_pending<STAGES - 2>(); // tile t has landed (later tiles may still be in flight)
    __syncthreads();            // ... for every thread, and everyone is done with tile t - 1
    const int next = t + STAGES - 1;
    if (next < tiles) load_tiles(next % STAGES, next * BLOCK_K);
    commit();
    const __half* as = As + (t % STAGES) * A_TILE;
    const __half* bs = Bs + (t % STAGES) * B_TILE;
#pragma unroll
    for (int kk = 0; kk < BLOCK_K; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], as + (wm + i * 16) * A_LD + kk, A_LD);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], bs + kk * B_LD + wn + j * 16, B_LD);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(C + (size_t)(bm + wm + i * 16) * N + bn + wn + j * 16, acc[i][j], N,
                              wmma::mem_row_major);
}
)";

/// The kernel, optionally under another name (a unique name defeats every cache, for benchmarks).
inline cotune::kernel_source gemm_kernel(const std::string& name = "gemm_fp16") {
  std::string code = gemm_code;
  code.replace(code.find("gemm_fp16("), 9, name);
  return {.name = name, .code = code, .entry = name};
}

/// 16 candidates: 64 or 128 rows and columns per block, times four (BLOCK_K, warps, stages) choices.
inline std::vector<cotune::config> gemm_configs() {
  struct inner {
    int block_k, warps, stages;
  };
  std::vector<cotune::config> out;
  for (int bm : {64, 128})
    for (int bn : {64, 128})
      for (inner in : {inner{32, 4, 3}, inner{32, 8, 4}, inner{64, 4, 2}, inner{64, 8, 3}})
        out.emplace_back(cotune::config({{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", in.block_k}},
                                        cotune::launch_options{.num_warps = in.warps, .num_stages = in.stages}));
  return out;
}

/// Dynamic shared memory of a config: its stages of padded A and B tiles (as the kernel lays them out).
[[nodiscard]] inline unsigned gemm_shared_bytes(const cotune::config& c) {
  const auto bm = cotune::eval(cotune::p("BLOCK_M"), c), bn = cotune::eval(cotune::p("BLOCK_N"), c),
             bk = cotune::eval(cotune::p("BLOCK_K"), c);
  return static_cast<unsigned>(c.launch().num_stages * (bm * (bk + 8) + bk * (bn + 8)) * 2);
}

using gemm_signature = void(cuda::device_span<const cuda::float16>, cuda::device_span<const cuda::float16>,
                            cuda::device_span<float>, int, int, int);
using gemm_tuner = cotune::autotuner<gemm_signature, cuda::cuda_backend>;
using A_span = cuda::device_span<const cuda::float16>;
using C_span = cuda::device_span<float>;

/// Names, the key (M, N, K), an early prune to the tiles that divide the problem, and the grid.
inline gemm_tuner::options gemm_options() {
  return {.arg_names = {"A", "B", "C", "M", "N", "K"},
          .key = {"M", "N", "K"},
          .early_config_prune =
              [](const std::vector<cotune::config>& configs, const auto&, const auto&, const auto&, const int& M,
                 const int& N, const int& K) {
                std::vector<cotune::config> kept;
                for (const auto& c : configs)
                  if (M % cotune::eval(cotune::p("BLOCK_M"), c) == 0 && N % cotune::eval(cotune::p("BLOCK_N"), c) == 0 &&
                      K % cotune::eval(cotune::p("BLOCK_K"), c) == 0)
                    kept.push_back(c);
                return kept;
              },
          .grid = [](const cotune::config& c, const auto&, const auto&, const auto&, const int& M, const int& N,
                     const auto&) {
            return cotune::grid(c, cdiv(N, cotune::p("BLOCK_N")), cdiv(M, cotune::p("BLOCK_M")))
                .with_shared(gemm_shared_bytes(c));
          },
          .cache_results = true};
}

/// Inputs in [-1, 1], rounded to fp16.
inline std::vector<cuda::float16> random_halves(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<cuda::float16> out(n);
  for (auto& h : out) h = cuda::float16(dist(rng));
  return out;
}

} // namespace example04

#ifndef COTUNE_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  using namespace example04;
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("no CUDA device: skipping (%s)\n", cuda::availability().message.c_str());
    return 0;
  }
  const int size = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (size <= 0 || size % 128 != 0) {
    std::fprintf(stderr, "04_tune_cuda_gemm: the size must be a positive multiple of 128 (got '%s')\n", argv[1]);
    return 2;
  }
  const int M = size, N = size, K = size;
  const auto a = random_halves(std::size_t(M) * K, 1), b = random_halves(std::size_t(K) * N, 2);

  // One copy of the operands per GPU (index = device index). With several identical GPUs the tuner
  // splits the candidates across them, each measuring with its own copy.
  struct operands {
    cuda::device_buffer<cuda::float16> a, b;
    cuda::device_buffer<float> c;
  };
  std::vector<operands> per_device;
  bool identical = true;
  for (const auto& d : devices) {
    identical = identical && cuda::interchangeable(d, devices.front());
    per_device.push_back({cuda::device_buffer<cuda::float16>(d, a), cuda::device_buffer<cuda::float16>(d, b),
                          cuda::device_buffer<float>(d, std::size_t(M) * N)});
  }
  auto args_on = [&](std::size_t d) {
    const operands& o = per_device.at(d);
    return std::tuple<A_span, A_span, C_span, int, int, int>(o.a.span(), o.b.span(), o.c.span(), M, N, K);
  };

  auto options = gemm_options();
  if (per_device.size() > 1 && identical)
    options.args_for_device = [&](std::size_t d, const A_span&, const A_span&, const C_span&, const int&, const int&,
                                  const int&) { return args_on(d); };
  gemm_tuner tuner{gemm_kernel(), gemm_configs(), std::move(options)};
  std::printf("cotune example 04: tuning a %dx%dx%d fp16 GEMM (fp32 accumulate), %zu candidates, on %zu x %s (cache: %s)\n",
              M, N, K, tuner.configs().size(), identical ? per_device.size() : std::size_t{1}, tuner.backend().device_name(devices.front()).c_str(),
              cotune::knobs().cache.dir.get().c_str());

  auto [sa, sb, sc, m, n, k] = args_on(0);
  const auto& result = tuner.tune_now(sa, sb, sc, m, n, k);
  if (result.from_cache)
    std::printf("tuning result from the disk cache (measured on %s at %s); NVRTC compilations: %llu\n",
                result.made.device.c_str(), result.made.date.c_str(),
                static_cast<unsigned long long>(cuda::nvrtc().compilations()));
  else
    std::printf("tuned in %.3f s; NVRTC compilations: %llu\n", result.wall_ms / 1000.0,
                static_cast<unsigned long long>(cuda::nvrtc().compilations()));
  cotune::printing_observer::print_table(stdout, result);

  per_device.front().c.zero();
  tuner(sa, sb, sc, m, n, k); // the tuned call: a table lookup and a launch
  const auto got = per_device.front().c.to_vector();

  // CPU fp32 reference from the same fp16 inputs.
  std::vector<float> fa(a.size()), fb(b.size()), ref(std::size_t(M) * N, 0.0f);
  std::transform(a.begin(), a.end(), fa.begin(), [](cuda::float16 h) { return float(h); });
  std::transform(b.begin(), b.end(), fb.begin(), [](cuda::float16 h) { return float(h); });
  for (int i = 0; i < M; ++i)
    for (int kk = 0; kk < K; ++kk) {
      const float av = fa[std::size_t(i) * K + kk];
      float* row = &ref[std::size_t(i) * N];
      const float* brow = &fb[std::size_t(kk) * N];
      for (int j = 0; j < N; ++j) row[j] += av * brow[j];
    }
  double max_err = 0, max_ref = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    max_err = std::max(max_err, double(std::fabs(got[i] - ref[i])));
    max_ref = std::max(max_ref, double(std::fabs(ref[i])));
  }
  // fp16 products are exact in fp32; the summation order differs from the reference, and tensor cores
  // may truncate rather than round while accumulating: errors stay far below 1e-3 of the largest
  // value, while a wrong tile or a missed k-step is off by a sizeable fraction of it.
  const double tolerance = 1e-3 * max_ref;
  const double ms = result.candidates[result.winner].time[0];
  std::printf("best config: {%s}", result.shown(result.best()).c_str());
  if (ms > 0) std::printf(", %.1f TFLOP/s", 2.0 * M * N * K / (ms * 1e9));
  std::printf("\ntuned kernel output vs CPU fp32 reference: max abs error %.3g (tolerance %.3g) -> %s\n", max_err,
              tolerance, max_err <= tolerance ? "OK" : "WRONG");
  return max_err <= tolerance ? 0 : 1;
}
#endif
