// Kernels of the precompiled-file tests (tests/cuda/test_cuda_backend.cpp, tests/hip/test_hip_backend.cpp):
// tests/CMakeLists.txt builds them with cotune_precompile() from precompiled.job.json, for sm_90 (nvcc)
// and gfx90a (hipcc). y = a * x + y, ITEMS elements per thread.

extern "C" __global__ void scale_add(float* y, const float* x, float a, int n) {
  const int first = blockIdx.x * COTUNE_THREADS_PER_BLOCK * ITEMS + threadIdx.x;
  for (int j = 0; j < ITEMS; ++j) {
    const int i = first + j * COTUNE_THREADS_PER_BLOCK;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

// The same as a template over ITEMS: its entry is a name expression, `scale_add_items<ITEMS>`.
template <int Items>
__global__ void scale_add_items(float* y, const float* x, float a, int n) {
  const int first = blockIdx.x * COTUNE_THREADS_PER_BLOCK * Items + threadIdx.x;
  for (int j = 0; j < Items; ++j) {
    const int i = first + j * COTUNE_THREADS_PER_BLOCK;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
