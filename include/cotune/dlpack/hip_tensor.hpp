#pragma once
/// \file `cotune::dlpack::hip_tensor<T>`: a DLPack tensor in HIP memory (kDLROCM) as a HIP kernel's
/// buffer argument (dlpack/device_tensor.hpp): PyTorch's ROCm tensors, CuPy's and JAX's on AMD GPUs.
/// Built with the HIP module (cotune::hip) and cotune::dlpack.

#include <cotune/dlpack/device_tensor.hpp>

#include <cotune/hip/device_buffer.hpp>

namespace cotune::dlpack {

/// HIP memory: kDLROCM.
inline constexpr device_rule hip_memory{"HIP device memory", kDLROCM, kDLROCM,
                                        "x.cuda() or x.to('cuda:N') in PyTorch for ROCm, cupy.asarray(x)",
                                        "dlpack::hip_tensor"};

/// A DLPack tensor in one HIP device's memory; `T` the element type the kernel declares, or `void`
/// (the default) for any.
template <class T = void>
using hip_tensor = device_tensor<hip::memory_runtime, hip_memory, T>;

static_assert(WritableBuffer<hip_tensor<float>> && WritableBuffer<hip_tensor<>>);
static_assert(Buffer<hip_tensor<const float>> && !WritableBuffer<hip_tensor<const float>>);

} // namespace cotune::dlpack
