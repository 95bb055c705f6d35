// Kernels nvcc compiles into test_cuda_compiled_backend (tests/cuda/compiled_kernels.hpp).

#include "compiled_kernels.hpp"

namespace {

template <int BLOCK, int ITEMS, bool TRAP>
__global__ void scale(const float* x, float* y, int n) {
  if (TRAP) __trap();
  const long long base = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = base + static_cast<long long>(k) * BLOCK;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
  }
}

} // namespace

namespace cotune_test {

cotune::cuda::compiled_kernels<scale_signature> scale_kernels() {
  using cotune::cuda::axis;
  return cotune::cuda::compiled_kernels<scale_signature>{}
      .add_grid([](auto block, auto items) { return scale<block, items, false>; }, axis<64, 128, 256>{"BLOCK"},
                axis<1, 2, 4>{"ITEMS"})
      .add({{"BLOCK", 32}, {"ITEMS", 8}}, scale<32, 8, false>)
      .threads_from("BLOCK");
}

cotune::cuda::compiled_kernels<scale_signature> trap_kernels() {
  return cotune::cuda::compiled_kernels<scale_signature>{}
      .add({{"BLOCK", 128}, {"ITEMS", 1}, {"TRAP", 0}}, scale<128, 1, false>)
      .add({{"BLOCK", 128}, {"ITEMS", 1}, {"TRAP", 1}}, scale<128, 1, true>)
      .threads_from("BLOCK");
}

} // namespace cotune_test
