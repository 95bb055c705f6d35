#pragma once
/// \file `cotune::hip::compiled_kernels<Signature>`: `__global__` functions hipcc compiled into the
/// program, one per config, as a tuner's candidates (gpu/compiled_kernels.hpp says how to declare
/// them). Include this header in the `.hip` file that instantiates the kernels; the tuner's C++ file
/// includes <cotune/hip/compiled_backend.hpp>. The standard library only.

#include <cotune/gpu/compiled_kernels.hpp>

namespace cotune::hip {

/// How a compiled HIP kernel is found: by its host address itself, which hipLaunchKernel and
/// hipFuncGetAttributes take (HIP 5.2 has no hipGetFuncBySymbol; the address works on 5.x and 6.x).
struct compiled_runtime {
  template <class Kernel>
  static int lookup(void** function, const void* host_address) {
    *function = const_cast<void*>(host_address);
    return 0;
  }
};

/// Kernels of signature `Signature` hipcc compiled, one per config:
///
///     auto kernels = cotune::hip::compiled_kernels<void(const float*, float*, int)>{}
///         .add({{"BLOCK", 256}, {"ITEMS", 4}}, reduce<256, 4>);
template <class Signature>
using compiled_kernels = gpu::compiled_kernels<Signature, compiled_runtime>;

using gpu::axis;

} // namespace cotune::hip
