#pragma once
// The kernels of tests/hip/compiled_kernels.hip, which hipcc compiles into test_hip_compiled_backend.

#include <cotune/hip/compiled_kernels.hpp>

namespace cotune_test {

/// y[i] = 2 x[i] + 1, each thread doing ITEMS elements of a BLOCK * ITEMS tile.
using hip_scale_signature = void(const float*, float*, int);

/// 2 x 2 grid points: BLOCK 64/256, ITEMS 1/4.
[[nodiscard]] cotune::hip::compiled_kernels<hip_scale_signature> hip_scale_kernels();

} // namespace cotune_test
