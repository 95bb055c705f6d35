#pragma once
/// \file The DLPack module's umbrella header: tensors from PyTorch, CuPy, JAX and TensorFlow as kernel
/// arguments (`dlpack::host_tensor<T>`, and `dlpack::cuda_tensor<T>` / `dlpack::hip_tensor<T>` with the
/// CUDA / HIP module). Link `cotune::dlpack`; `COTUNE_HAS_DLPACK` is defined when it is available. Not
/// included by <cotune/cotune.hpp>: only the files that take tensors read <dlpack/dlpack.h>.

#include <cotune/dlpack/dtype.hpp>
#include <cotune/dlpack/host_tensor.hpp>
#include <cotune/dlpack/tensor_facts.hpp>
#if defined(COTUNE_HAS_CUDA)
#include <cotune/dlpack/cuda_tensor.hpp>
#endif
#if defined(COTUNE_HAS_HIP)
#include <cotune/dlpack/hip_tensor.hpp>
#endif
