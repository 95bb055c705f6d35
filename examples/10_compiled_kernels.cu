// 10 (the kernels): a templated reduction compiled by nvcc with the program, 24 instantiations over
// three parameters, declared as a tuner's candidates. nvcc compiles this file; the tuner lives in
// 10_compiled_kernels.cpp (nvcc's front end cannot parse cotune's tuner headers, so the table of kernels
// crosses over through a function). The kernel template alone also compiles through NVRTC
// (benchmarks/bench_cuda_compiled.cpp compares the two ways); NVRTC sees no table.
#if !defined(__CUDACC_RTC__)
#include <cotune/cuda/compiled_kernels.hpp>
#endif

namespace example10 {

/// Adds x[0..n) into *total: each block sums Block * Items elements (each thread Items of them, Block
/// apart), reduces them with warp shuffles (Shuffle) or a shared-memory tree, and adds its sum with one
/// atomic. Integers, so that every candidate's result is exact and equal to the CPU's.
template <int Block, int Items, bool Shuffle>
__global__ void __launch_bounds__(Block) sum(const int* x, unsigned long long* total, int n) {
  const long long first = static_cast<long long>(blockIdx.x) * Block * Items + threadIdx.x;
  unsigned long long acc = 0;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const long long i = first + static_cast<long long>(k) * Block;
    if (i < n) acc += static_cast<unsigned long long>(x[i]);
  }
  if constexpr (Shuffle) {
    __shared__ unsigned long long warps[Block / 32];
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long block_sum = 0;
      for (int w = 0; w < Block / 32; ++w) block_sum += warps[w];
      atomicAdd(total, block_sum);
    }
  } else {
    __shared__ unsigned long long partial[Block];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = Block / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, partial[0]);
  }
}

#if !defined(__CUDACC_RTC__)
/// The 24 candidates: every BLOCK, ITEMS and SHUFFLE, written once as axes; BLOCK is the thread count.
cotune::cuda::compiled_kernels<void(const int*, unsigned long long*, int)> sum_kernels() {
  using cotune::cuda::axis;
  return cotune::cuda::compiled_kernels<void(const int*, unsigned long long*, int)>{}
      .add_grid([](auto block, auto items, auto shuffle) { return sum<block, items, shuffle>; },
                axis<64, 128, 256, 512>{"BLOCK"}, axis<1, 4, 16>{"ITEMS"}, axis<false, true>{"SHUFFLE"})
      .threads_from("BLOCK");
}
#endif

} // namespace example10
