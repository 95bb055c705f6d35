#pragma once
// The kernel that the CUDA and HIP isolation tests tune: MODE 1 writes far outside any allocation,
// 2 traps (with the runtime's `trap` call), 3 never ends; 0 is good, out = 2 x (TAG tells good
// configs apart).

#include <string>

#include <cotune/core/kernel_source.hpp>

namespace cotune_test {

inline cotune::kernel_source fault_kernel(const std::string& name, const std::string& trap) {
  std::string code = "extern \"C\" __global__ void " + name + R"((const float* x, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if MODE == 1
  if (i == 0) out[(1ull << 40)] = 1.0f;
#elif MODE == 2
  if (i == 0) )" + trap + R"(();
#elif MODE == 3
  if (i == 0) while (((volatile const float*)x)[0] >= 0.0f) {} // x[0] is 0: a volatile read forever
#elif MODE == 4
  return; // writes nothing: only verification with poisoned outputs can tell
#endif
  if (i < n) out[i] = 2.0f * x[i] + 0.0f * TAG;
}
)";
  return {.name = name, .code = std::move(code), .entry = name};
}

} // namespace cotune_test
