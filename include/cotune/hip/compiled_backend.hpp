#pragma once
/// \file `cotune::hip::compiled_backend<Signature>`: tunes `__global__` functions hipcc compiled into
/// the program, one per config (gpu/compiled_backend.hpp; the kernels are declared in a `.hip` file with
/// hip/compiled_kernels.hpp). A compiled kernel is named by its host address, which the HIP runtime
/// launches (hipLaunchKernel) and describes (hipFuncGetAttributes) on HIP 5.2 and 6 alike; both are
/// looked up in the runtime cotune opened. Its isolation worker cannot find such a kernel yet (it runs
/// before the program registers its code objects), so COTUNE_ISOLATE measures these candidates
/// in-process, with a warning saying so.

#include <cotune/detail/config.hpp>

#include <optional>
#include <string>
#include <string_view>

#include <cotune/backend/backend.hpp>
#include <cotune/gpu/compiled_backend.hpp>
#include <cotune/hip/compiled_kernels.hpp>
#include <cotune/hip/hip_api.hpp>
#include <cotune/hip/hip_backend.hpp>

namespace cotune::hip::detail {

/// The HIP runtime's calls on a kernel named by its host address (looked up once in the runtime cotune
/// opened: a program built by hipcc links the same library).
struct address_calls {
  struct dim3 {
    unsigned x, y, z;
  };
  /// hipFuncAttributes, as HIP 5.2 and 6 declare it.
  struct attributes {
    int binary_version;
    int cache_mode_ca;
    std::size_t const_size_bytes;
    std::size_t local_size_bytes;
    int max_dynamic_shared_size_bytes;
    int max_threads_per_block;
    int num_regs;
    int preferred_shmem_carveout;
    int ptx_version;
    std::size_t shared_size_bytes;
  };
  hip_error (*launch)(const void*, dim3, dim3, void**, std::size_t, hip_stream) = nullptr; ///< hipLaunchKernel
  hip_error (*get_attributes)(attributes*, const void*) = nullptr;                        ///< hipFuncGetAttributes
};

/// The calls, resolved once in `lib` (null members where the runtime lacks them).
[[nodiscard]] COTUNE_DECL const address_calls& address_calls_of(const runtime_library& lib);

/// gpu/loaded_kernel.hpp's calls for a kernel hipcc compiled: HIP's, but a function is its host
/// address, launched with hipLaunchKernel and described by hipFuncGetAttributes.
struct compiled_kernel_calls : kernel_calls {
  static constexpr std::string_view attribute_call = "hipFuncGetAttributes";

  static hip_error attribute(const device_context& ctx, int* v, gpu::kernel_attribute a, hip_function f);
  static hip_error launch(const device_context& ctx, hip_function f, const launch_grid& g, const block_dims& b,
                          hip_stream stream, void** params);
};

/// What gpu::compiled_backend needs of HIP beyond the GPU backend's table.
struct compiled_api : backend_api {
  using kernel_calls = compiled_kernel_calls;
  static constexpr std::string_view lookup_call = "finding the kernel by its address";
  [[nodiscard]] static hip_function from_lookup(void* found) noexcept { return found; }
  [[nodiscard]] static std::optional<gpu::worker_image> compiled_image(const device_context&, hip_function, const void*,
                                                                       std::string& why) {
    why = "an isolation worker cannot find a kernel hipcc compiled (it starts before the program registers its code "
          "objects)";
    return std::nullopt;
  }
};

} // namespace cotune::hip::detail

namespace cotune::hip {

/// Tunes `__global__` functions of signature `Signature` that hipcc compiled into the program (see the
/// file's comment). Satisfies `cotune::Backend`.
template <class Signature>
using compiled_backend = gpu::compiled_backend<detail::compiled_api, Signature>;

static_assert(Backend<compiled_backend<void(const float*, float*, int)>>);
static_assert(LaunchesOnStreams<compiled_backend<void(int)>> && DeclaresBinaryCaching<compiled_backend<void(int)>>);

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/compiled_backend.ipp>
#endif
