#pragma once
/// \file Tuning CUDA kernels with `cotune::autotuner`: the CUDA backend is measured with the CUDA
/// benchmarker by default, and small helpers compute launch grids from a config.
///
///     using gemm_tuner = cotune::autotuner<void(device_span<const float16>, device_span<const float16>,
///                                               device_span<float>, int, int, int),
///                                          cotune::cuda::cuda_backend>;
///     gemm_tuner tuner{kernel, configs, {.arg_names = {"A", "B", "C", "M", "N", "K"}, .key = {"M", "N", "K"},
///                                        .grid = [](const cotune::config& c, auto&&...) { ... }}};
///
/// Include this header (or <cotune/cuda/cuda.hpp>) before naming such a tuner: the default
/// benchmarker is chosen where the tuner's type is first named, and without this header it would be
/// the host clock, which times only the launch of asynchronous GPU work.

#include <cstdint>
#include <string_view>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/job_instantiation.hpp>

// CUDA kernels are timed with CUDA events (do_bench's semantics), never with the host clock: the
// backend declares `default_benchmarker_type = cuda_benchmarker`, which the autotuner picks up.

namespace cotune::cuda {

/// ceil(n / block) as a grid dimension; throws cotune::error when it does not fit one.
[[nodiscard]] constexpr unsigned cdiv(std::int64_t n, std::int64_t block) {
  if (block <= 0) throw error(fmt::format("cdiv({}, {}): the block size must be positive", n, block));
  if (n <= 0) return 0;
  const std::int64_t blocks = (n + block - 1) / block;
  // CUDA's limit for gridDim.x; y and z are smaller (65535) and checked by the driver at launch.
  if (blocks > 2147483647)
    throw error(fmt::format("cdiv({}, {}) = {} blocks exceeds CUDA's grid limit of 2^31 - 1", n, block, blocks));
  return static_cast<unsigned>(blocks);
}

/// The integer value of a config's parameter `name`, for grid functions. Throws cotune::error naming
/// the config when it has no such integer parameter.
[[nodiscard]] inline std::int64_t param_int(const config& c, std::string_view name) {
  const value& v = c.at(name);
  if (!v.is_int())
    throw error(fmt::format("config {{{}}}: parameter '{}' is {}, but a grid needs an integer", c.text(), name,
                            v.text()));
  return v.as_int();
}

/// A 1-D grid: one block per `block_param` elements of `n` (Triton's `(cdiv(n, meta['BLOCK']),)`).
[[nodiscard]] inline launch_grid grid_1d(const config& c, std::int64_t n, std::string_view block_param = "BLOCK") {
  return launch_grid{.x = cdiv(n, param_int(c, block_param))};
}

/// A 2-D grid over a `rows` x `cols` output: x walks columns in tiles of `col_param`, y rows in tiles
/// of `row_param`, with `shared_bytes` of dynamic shared memory.
[[nodiscard]] inline launch_grid grid_2d(const config& c, std::int64_t rows, std::int64_t cols,
                                         std::string_view row_param, std::string_view col_param,
                                         unsigned shared_bytes = 0) {
  return launch_grid{.x = cdiv(cols, param_int(c, col_param)), .y = cdiv(rows, param_int(c, row_param)),
                     .shared_bytes = shared_bytes};
}

} // namespace cotune::cuda

#if !COTUNE_HEADER_ONLY
// COTUNE_SEPARATE_COMPILATION: a CUDA tuner's job and table of keys over the file cache (the bulk of a
// tuner's code, the same for every kernel signature) are compiled once, in <cotune/impl/cuda_src.hpp>.
COTUNE_EXTERN_TUNING_JOB(cotune::cuda::cuda_backend, cotune::cuda::cuda_benchmarker, cotune::file_cache);
#endif
