// Example 04's GEMM kernel (examples/04_tune_cuda_gemm.cpp), as `cotune tune` takes it from a job
// file (gemm_cuda.json): C = A x B, fp16 inputs, fp32 accumulation on tensor cores. The tuner passes
// BLOCK_M, BLOCK_N, BLOCK_K as macros, and the config's warps and stages as COTUNE_NUM_WARPS and
// COTUNE_NUM_STAGES. M, N and K must be multiples of the block tile (the job's constraints say so).
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
