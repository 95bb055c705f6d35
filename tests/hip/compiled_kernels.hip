// Kernels hipcc compiles into test_hip_compiled_backend for gfx90a (tests/hip/compiled_kernels.hpp).

#include <hip/hip_runtime.h>

#include "compiled_kernels.hpp"

namespace {

template <int BLOCK, int ITEMS>
__global__ void scale(const float* x, float* y, int n) {
  const long long base = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = base + static_cast<long long>(k) * BLOCK;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
  }
}

} // namespace

namespace cotune_test {

cotune::hip::compiled_kernels<hip_scale_signature> hip_scale_kernels() {
  using cotune::hip::axis;
  return cotune::hip::compiled_kernels<hip_scale_signature>{}
      .add_grid([](auto block, auto items) { return scale<block, items>; }, axis<64, 256>{"BLOCK"}, axis<1, 4>{"ITEMS"})
      .threads_from("BLOCK");
}

} // namespace cotune_test
