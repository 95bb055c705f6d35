#pragma once
/// \file `cotune::cuda::cuda_knobs()`: the CUDA module's settings, each bound to an environment variable.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <optional>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::cuda {

/// Where the CUDA libraries come from, how kernels are compiled and how they are timed.
struct cuda_knob_group {
  knob<std::optional<std::string>> libcuda_path{
      {.name = "cuda.libcuda_path", .env = "COTUNE_LIBCUDA_PATH",
       .doc = "the CUDA driver library to dlopen; unset = libcuda.so.1 from the loader's search path. "
              "A library that does not load means no CUDA devices (cotune::cuda::availability() says why)"}};
  knob<std::optional<std::string>> libnvrtc_path{
      {.name = "cuda.libnvrtc_path", .env = "COTUNE_LIBNVRTC_PATH",
       .doc = "the NVRTC library to dlopen; unset = libnvrtc.so.<toolkit major> from the loader's search path, "
              "then $CUDA_HOME/lib64 and /usr/local/cuda/lib64"}};
  // In batch mode (bench.batch_below_us) the flush runs once before each batch, outside its timing.
  // 1x: measured on an H200 (60 MB L2; the "[gpu][.probe]" case of tests/cuda/test_cuda_benchmarker.cpp),
  // a kernel reading 31 MB ran in 8.0 us warm, 11.3 us after a 0.25x flush, and 15.0-15.8 us after
  // any flush from 0.5x to 4x: eviction is complete from 0.5x, so 1x keeps a 2x margin at a quarter
  // of the cost of Triton's fixed 256 MiB (and more measured runs fit in each budget).
  knob<double> flush_factor{
      {.name = "cuda.flush_factor", .env = "COTUNE_CUDA_FLUSH_FACTOR", .fallback = 1.0,
       .doc = "size of the L2 flush written before each timed run, as a multiple of the device's L2 size; "
              "0 = no flush (kernels are then timed with a warm cache)",
       .validate = cotune::detail::at_least(0.0, "COTUNE_CUDA_FLUSH_FACTOR")}};
  knob<bool> graph{{.name = "cuda.graph", .env = "COTUNE_CUDA_GRAPH", .fallback = false,
                    .doc = "time every kernel in CUDA graph batches of N launches (one L2 flush before each batch), "
                           "whatever its length; off = only kernels under bench.batch_below_us are batched"}};
  // On by default: measured on the 32-core H200 host (2026-11-30, example 04's GEMM), 16 concurrent
  // NVRTC compiles took 1.17-1.54 s on threads of one process and 0.34-0.41 s in processes, against
  // 0.25 s for one compile alone: NVRTC serialises much of its work inside a process.
  knob<bool> compile_processes{
      {.name = "cuda.compile_processes", .env = "COTUNE_CUDA_COMPILE_PROCESSES", .fallback = true,
       .doc = "compile CUDA kernels in warm compile processes forked from a compile server (one fork of the program, "
              "taken at the first compile or by nvrtc().start_compile_server()): compiles then run in parallel, "
              "COTUNE_COMPILE_TIMEOUT_MS and cancellation stop them midway, and an NVRTC crash fails that one "
              "candidate; 0 = compile on the compile pool's threads (no timeout midway)"}};
  // 0 = one per hardware thread: each thread of the compile pool (hardware threads by default) then
  // finds a warm process, and more than that would only sit idle holding memory.
  knob<int> compile_workers{
      {.name = "cuda.compile_workers", .env = "COTUNE_CUDA_COMPILE_WORKERS", .fallback = 0,
       .doc = "warm compile processes kept by the CUDA compile server, each with NVRTC set up and serving many "
              "compiles (0 = one per hardware thread); compiles beyond them get a process forked for them alone",
       .validate = cotune::detail::at_least(0, "COTUNE_CUDA_COMPILE_WORKERS")}};
  knob<std::string> nvrtc_options{
      {.name = "cuda.nvrtc_options", .env = "COTUNE_NVRTC_OPTIONS", .fallback = "",
       .doc = "extra NVRTC options for every CUDA kernel, split on spaces (e.g. -lineinfo --use_fast_math); "
              "part of every cache key",
       .invalidating = true}};
};

/// The process's CUDA knobs.
[[nodiscard]] COTUNE_DECL cuda_knob_group& cuda_knobs();

#if !COTUNE_HEADER_ONLY
namespace detail {
// With COTUNE_SEPARATE_COMPILATION the group and its registration are one object of the static library
// (impl/cuda_src.hpp): every file that includes this header refers to it, so that a link brings it in
// and the knobs are registered before `main`, as header-only, even in a program that never reads them.
[[gnu::used]] static cuda_knob_group& (*const cuda_knobs_link)() = &cuda_knobs;
} // namespace detail
#endif

} // namespace cotune::cuda

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/cuda_knobs.ipp>
#endif
