// The find_package consumer's kernels, compiled by nvcc against the installed package's
// <cotune/cuda/compiled_kernels.hpp> (when nvcc is found): two instantiations of a template as
// compiled candidates, which consumer.cpp tunes (on a GPU) or lists (without one).
#include <cotune/cuda/compiled_kernels.hpp>

template <int BLOCK>
__global__ void consumer_fill(int* out, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = BLOCK;
}

cotune::cuda::compiled_kernels<void(int*, int)> consumer_kernels() {
  return cotune::cuda::compiled_kernels<void(int*, int)>{}
      .add_grid([](auto block) { return consumer_fill<block>; }, cotune::cuda::axis<64, 128>{"BLOCK"})
      .threads_from("BLOCK");
}
