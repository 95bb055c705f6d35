#pragma once
/// \file `cotune::hip::hip_knobs()`: the HIP module's settings, each bound to an environment variable.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <optional>
#include <string>

#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::hip {

/// Where the HIP libraries come from, how kernels are compiled and how they are timed.
struct hip_knob_group {
  knob<std::optional<std::string>> libamdhip64_path{
      {.name = "hip.libamdhip64_path", .env = "COTUNE_LIBAMDHIP64_PATH",
       .doc = "the HIP runtime library to dlopen; unset = libamdhip64.so.6, then libamdhip64.so.5, from the loader's "
              "search path, then /opt/rocm/lib. A library that does not load means no HIP devices "
              "(cotune::hip::availability() says why)"}};
  knob<std::optional<std::string>> libhiprtc_path{
      {.name = "hip.libhiprtc_path", .env = "COTUNE_LIBHIPRTC_PATH",
       .doc = "the hiprtc library to dlopen; unset = libhiprtc.so.6, libhiprtc.so.5, then the HIP runtime library "
              "itself (HIP 5 builds hiprtc into libamdhip64)"}};
  // 1x, as for CUDA (cuda_knobs.hpp): eviction was complete from 0.5x of the L2 on the H200. Not
  // measured on an AMD GPU (none was at hand); MI200's L2 is 8 MB per die, so the flush is small.
  knob<double> flush_factor{
      {.name = "hip.flush_factor", .env = "COTUNE_HIP_FLUSH_FACTOR", .fallback = 1.0,
       .doc = "size of the L2 flush written before each timed run, as a multiple of the device's L2 size; "
              "0 = no flush (kernels are then timed with a warm cache)",
       .validate = cotune::detail::at_least(0.0, "COTUNE_HIP_FLUSH_FACTOR")}};
  knob<bool> graph{{.name = "hip.graph", .env = "COTUNE_HIP_GRAPH", .fallback = false,
                    .doc = "time every kernel in HIP graph batches of N launches (as cuda.graph), whatever its length; "
                           "off = only kernels under bench.batch_below_us are batched"}};
  // On, as for CUDA: warm compile processes, so that a compile can be stopped midway and a crash of
  // the compiler fails one candidate. hiprtc's parallelism between threads was not measured.
  knob<bool> compile_processes{
      {.name = "hip.compile_processes", .env = "COTUNE_HIP_COMPILE_PROCESSES", .fallback = true,
       .doc = "compile HIP kernels in warm compile processes forked from a compile server: COTUNE_COMPILE_TIMEOUT_MS "
              "and cancellation stop them midway, and a hiprtc crash fails that one candidate; 0 = compile on "
              "the compile pool's threads"}};
  knob<int> compile_workers{
      {.name = "hip.compile_workers", .env = "COTUNE_HIP_COMPILE_WORKERS", .fallback = 0,
       .doc = "warm compile processes kept by the HIP compile server (0 = one per hardware thread)",
       .validate = cotune::detail::at_least(0, "COTUNE_HIP_COMPILE_WORKERS")}};
  knob<std::string> hiprtc_options{
      {.name = "hip.hiprtc_options", .env = "COTUNE_HIPRTC_OPTIONS", .fallback = "",
       .doc = "extra hiprtc options for every HIP kernel, split on spaces (e.g. -ffast-math, or --offload-arch=gfx942 "
              "to compile for another GPU than the device's); part of every cache key",
       .invalidating = true}};
};

/// The process's HIP knobs.
[[nodiscard]] COTUNE_DECL hip_knob_group& hip_knobs();

#if !COTUNE_HEADER_ONLY
namespace detail {
// With COTUNE_SEPARATE_COMPILATION the group and its registration are one object of the static library
// (impl/hip_src.hpp): every file that includes this header refers to it, so that a link brings it in
// and the knobs are registered before `main`, as header-only, even in a program that never reads them.
[[gnu::used]] static hip_knob_group& (*const hip_knobs_link)() = &hip_knobs;
} // namespace detail
#endif

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/hip_knobs.ipp>
#endif
