#pragma once
/// \file `cotune::cuda::compiled_kernels<Signature>`: `__global__` functions nvcc compiled into the
/// program, one per config, as a tuner's candidates (gpu/compiled_kernels.hpp says how to declare them).
/// Include this header in the `.cu` file that instantiates the kernels; the tuner's C++ file includes
/// <cotune/cuda/compiled_backend.hpp>. The standard library and the CUDA runtime's header only: nvcc
/// compiles this.

#include <cotune/gpu/compiled_kernels.hpp>

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#endif

namespace cotune::cuda {

/// How a compiled CUDA kernel's device function is found: cudaGetFuncBySymbol, whose cudaFunction_t
/// is the driver's CUfunction, in the current context. `lookup` is defined only where nvcc compiles
/// (the CUDA runtime it calls is linked there); other files only call it through the table.
struct compiled_runtime {
  template <class Kernel>
  static int lookup(void** function, const void* host_address);
};

#if defined(__CUDACC__)
template <class Kernel>
int compiled_runtime::lookup(void** function, const void* host_address) {
  cudaFunction_t f = nullptr;
  const cudaError_t r = cudaGetFuncBySymbol(&f, host_address);
  *function = reinterpret_cast<void*>(f);
  return static_cast<int>(r);
}
#endif

/// Kernels of signature `Signature` nvcc compiled, one per config:
///
///     auto kernels = cotune::cuda::compiled_kernels<void(const float*, float*, int)>{}
///         .add({{"BLOCK", 256}, {"ITEMS", 4}}, reduce<256, 4>)
///         .add({{"BLOCK", 128}, {"ITEMS", 8}}, reduce<128, 8>);
template <class Signature>
using compiled_kernels = gpu::compiled_kernels<Signature, compiled_runtime>;

using gpu::axis;

} // namespace cotune::cuda
