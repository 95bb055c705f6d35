#pragma once
/// \file What the GPU backends (cuda_backend, hip_backend) share around their runtime compiler and
/// module API, written once: the macros a candidate sees, turning a compile's outcome into the right
/// error, the binary's meta as the binary cache stores it, the resource checks of a loaded kernel,
/// and packing a launch's arguments. Each backend keeps only what its runtime names differently.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/gpu/rtc_output.hpp>

namespace cotune::gpu {

/// How a backend and its compiler are named in messages: {"cuda backend", "NVRTC", "13.0"}.
struct rtc_names {
  std::string_view backend;
  std::string_view compiler;
  std::string compiler_version;
};

/// Compiler options given as one line of text (a knob), split at spaces.
[[nodiscard]] COTUNE_DECL std::vector<std::string> split_options(const std::string& text);

/// Appends the macros every candidate sees: each parameter as -DNAME=value, then COTUNE_NUM_WARPS,
/// COTUNE_NUM_STAGES, (with `warp_size_macro`) COTUNE_WARP_SIZE, COTUNE_THREADS_PER_BLOCK and
/// COTUNE_BLOCK_X/Y/Z. A warp is `warp_size` threads (a wavefront on AMD).
COTUNE_DECL void add_config_macros(std::vector<std::string>& out, const config& c, int warp_size, bool warp_size_macro);

/// Options as one line of text, the way a compile error shows them.
[[nodiscard]] COTUNE_DECL std::string options_text(const std::vector<std::string>& opts);

/// The checks before a compile: a kernel name that is a C identifier, an entry. Throws cotune::error.
COTUNE_DECL void check_kernel(const rtc_names& n, const kernel_source& k);

/// timeout_error for a compile cancelled before or while it ran.
[[nodiscard]] COTUNE_DECL timeout_error compile_cancelled(const rtc_names& n, const kernel_source& k, const config& c,
                                                     const std::string& arch);

/// Throws what stopped or broke a compile: timeout_error (past the deadline of `timeout_ms`, or a stop
/// request) or compiler_crashed (the compiler died: not the kernel's fault). Returns when the compile
/// ran to its end, successful or not.
COTUNE_DECL void throw_if_stopped_or_crashed(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                        const config& c, const std::string& arch, std::int64_t timeout_ms);

/// The compile_error of a kernel that does not compile: the compiler's result and log, the config,
/// the target and every option.
[[nodiscard]] COTUNE_DECL compile_error does_not_compile(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                                    const config& c, const std::string& arch,
                                                    const std::vector<std::string>& opts);

/// What the binary cache keeps beside a GPU binary's bytes: its symbol, target and compile log, and
/// whether the bytes are PTX text.
struct rtc_meta {
  std::string lowered_name;
  std::string arch;
  std::string log;
  bool is_ptx = false;

  [[nodiscard]] std::string json() const;
  /// Nothing when `text` is not meta written by `json()` (`is_ptx` may be missing: false).
  [[nodiscard]] static std::optional<rtc_meta> from_json(std::string_view text);
};

/// A loaded kernel's resources against its device's limits.
struct kernel_resources {
  int threads = 0;            ///< the config's threads per block
  int registers = 0;          ///< per thread
  int kernel_max_threads = 0; ///< the kernel's own limit (registers, __launch_bounds__); 0: none reported
  int static_shared_bytes = 0;
};

struct device_resources {
  int max_threads_per_block = 0;
  std::optional<std::int64_t> max_registers_per_block; ///< checked as registers x threads where given
  std::int64_t max_static_shared = 0;
  std::string_view shared_name = "shared memory"; ///< "shared memory (LDS)" on AMD
};

/// Checks a kernel loaded under config `c` before any launch: threads per block (at least one, the
/// device's limit, registers x threads, the kernel's own limit), static shared memory, and every block
/// dimension. Throws launch_error for a config that asks for no threads, out_of_resources naming the
/// resource and the limit otherwise. `backend` begins the message ("cuda backend").
COTUNE_DECL void check_loaded_kernel(std::string_view backend, const config& c, const kernel_resources& k,
                                const device_resources& d, const block_dims& block, const launch_limits& limits);

/// Calls `launch(params)` with `params[i]` pointing at `cotune::kernel_arg(args[i])` (device spans and
/// buffers as their device address, the rest by value) and a null after the last.
template <class Launch, class... Args>
void with_kernel_params(Launch&& launch, Args&... args) {
  std::tuple<std::decay_t<decltype(cotune::kernel_arg(args))>...> values(cotune::kernel_arg(args)...);
  std::apply(
      [&](auto&... v) {
        void* params[] = {static_cast<void*>(&v)..., nullptr};
        launch(static_cast<void**>(params));
      },
      values);
}

/// What a launch that the runtime refused was: kernel, config, grid, block and dynamic shared memory.
[[nodiscard]] COTUNE_DECL std::string launch_text(std::string_view kernel, std::string_view config_text,
                                             const launch_grid& grid, const block_dims& b);

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/rtc_compile.ipp>
#endif
