#pragma once
/// \file `cotune::dlpack::cuda_tensor<T>`: a DLPack tensor in CUDA memory (kDLCUDA, kDLCUDAManaged) as a
/// CUDA kernel's buffer argument (dlpack/device_tensor.hpp): PyTorch's, CuPy's or JAX's GPU tensors
/// through `__dlpack__` / `to_dlpack`, without unwrapping them by hand.
///
///     using signature = void(dlpack::cuda_tensor<const float>, dlpack::cuda_tensor<float>, int);
///     autotuner<signature, cuda::cuda_backend> tuner{kernel, configs, {.arg_names = {"x", "y", "n"}}};
///     tuner(x->dl_tensor, y->dl_tensor, n);   // DLTensor& or DLManagedTensor*
///
/// Built with the CUDA module (cotune::cuda) and cotune::dlpack.

#include <cotune/dlpack/device_tensor.hpp>

#include <cotune/cuda/device_buffer.hpp>

namespace cotune::dlpack {

/// CUDA memory: kDLCUDA, and kDLCUDAManaged (unified memory, which the device reads too).
inline constexpr device_rule cuda_memory{"CUDA device memory", kDLCUDA, kDLCUDAManaged,
                                         "x.cuda() or x.to('cuda:N') in PyTorch, cupy.asarray(x)",
                                         "dlpack::cuda_tensor"};

/// A DLPack tensor in one CUDA device's memory; `T` the element type the kernel declares, or `void`
/// (the default) for any.
template <class T = void>
using cuda_tensor = device_tensor<cuda::memory_runtime, cuda_memory, T>;

static_assert(WritableBuffer<cuda_tensor<float>> && WritableBuffer<cuda_tensor<>>);
static_assert(Buffer<cuda_tensor<const float>> && !WritableBuffer<cuda_tensor<const float>>);

} // namespace cotune::dlpack
