#pragma once
/// \file `cotune::cuda::compiled_backend<Signature>`: tunes `__global__` functions nvcc compiled into
/// the program, one per config (gpu/compiled_backend.hpp; the kernels are declared in a `.cu` file
/// with cuda/compiled_kernels.hpp). Launched through the driver API, as the CUDA backend launches, from
/// the function's handle (cudaGetFuncBySymbol): no NVRTC is loaded.
///
///     // kernels.cu
///     cotune::cuda::compiled_kernels<void(const float*, float*, int)> scale_kernels() { ... }
///     // tuner.cpp
///     cotune::cuda::compiled_backend<void(const float*, float*, int)> backend{scale_kernels()};
///     cotune::autotuner<void(cotune::cuda::device_span<const float>, cotune::cuda::device_span<float>, int),
///                       decltype(backend)> tuner{backend.source("scale"), backend.configs(), opts, backend};

#include <cotune/detail/config.hpp>

#include <optional>
#include <string>
#include <string_view>

#include <cuda.h>

#include <cotune/backend/backend.hpp>
#include <cotune/cuda/compiled_kernels.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/gpu/compiled_backend.hpp>

namespace cotune::cuda {

namespace detail {

/// The device image (the `.cu` file's fat binary) that holds compiled function `f`, whose host
/// address is `host_address`, and its symbol: what an isolation worker loads instead. Nothing, with
/// `why` set, when the driver cannot name the function (cuFuncGetName, CUDA 12.3) or no fat binary of
/// its file holds it.
[[nodiscard]] COTUNE_DECL std::optional<gpu::worker_image> compiled_image(const device_context& ctx, CUfunction f,
                                                                         const void* host_address, std::string& why);

/// What gpu::compiled_backend needs of CUDA beyond the GPU backend's table.
struct compiled_api : backend_api {
  static constexpr std::string_view lookup_call = "cudaGetFuncBySymbol";
  /// cudaGetFuncBySymbol's cudaFunction_t is the driver's CUfunction.
  [[nodiscard]] static CUfunction from_lookup(void* found) noexcept { return static_cast<CUfunction>(found); }
  [[nodiscard]] static std::optional<gpu::worker_image> compiled_image(const device_context& ctx, CUfunction f,
                                                                       const void* host_address, std::string& why) {
    return detail::compiled_image(ctx, f, host_address, why);
  }
};

} // namespace detail

/// Tunes `__global__` functions of signature `Signature` that nvcc compiled into the program (see
/// the file's comment). Satisfies `cotune::Backend`.
template <class Signature>
using compiled_backend = gpu::compiled_backend<detail::compiled_api, Signature>;

static_assert(Backend<compiled_backend<void(const float*, float*, int)>>);
static_assert(HasDeviceKey<compiled_backend<void(int)>> && ComparesDevices<compiled_backend<void(int)>> &&
              DeclaresBenchmarker<compiled_backend<void(int)>> && ReportsWarnings<compiled_backend<void(int)>> &&
              LaunchesOnStreams<compiled_backend<void(int)>> && DeclaresBinaryCaching<compiled_backend<void(int)>>);

} // namespace cotune::cuda

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/compiled_backend.ipp>
#endif
