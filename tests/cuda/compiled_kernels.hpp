#pragma once
// The kernels of tests/cuda/compiled_kernels.cu, which nvcc compiles into test_cuda_compiled_backend
// (a C++ file cannot include cotune's tuner headers and be compiled by nvcc: the table crosses over).

#include <cotune/cuda/compiled_kernels.hpp>

namespace cotune_test {

/// y[i] = 2 x[i] + 1, each thread doing ITEMS elements of a BLOCK * ITEMS tile.
using scale_signature = void(const float*, float*, int);

/// 3 x 3 grid points (BLOCK 64/128/256, ITEMS 1/2/4) and one more added by hand (BLOCK 32, ITEMS 8).
[[nodiscard]] cotune::cuda::compiled_kernels<scale_signature> scale_kernels();

/// Two candidates of scale with BLOCK 128, ITEMS 1: TRAP 0 works, TRAP 1 executes a trap instruction.
[[nodiscard]] cotune::cuda::compiled_kernels<scale_signature> trap_kernels();

} // namespace cotune_test
