#pragma once
/// \file What the GPU backends (cuda_backend, hip_backend) share around their runtime compiler and
/// module API, written once: the macros a candidate sees, turning a compile's outcome into the right
/// error, the binary's meta as the binary cache stores it, the resource checks of a loaded kernel,
/// and packing a launch's arguments. Each backend keeps only what its runtime names differently.

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
[[nodiscard]] inline std::vector<std::string> split_options(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

/// Appends the macros every candidate sees: each parameter as -DNAME=value, then COTUNE_NUM_WARPS,
/// COTUNE_NUM_STAGES, (with `warp_size_macro`) COTUNE_WARP_SIZE, COTUNE_THREADS_PER_BLOCK and
/// COTUNE_BLOCK_X/Y/Z. A warp is `warp_size` threads (a wavefront on AMD).
inline void add_config_macros(std::vector<std::string>& out, const config& c, int warp_size, bool warp_size_macro) {
  for (const auto& [name, v] : c.params()) out.push_back(fmt::format("-D{}={}", name, v.macro_text()));
  const auto& launch = c.launch();
  out.push_back(fmt::format("-DCOTUNE_NUM_WARPS={}", launch.num_warps));
  out.push_back(fmt::format("-DCOTUNE_NUM_STAGES={}", launch.num_stages));
  if (warp_size_macro) out.push_back(fmt::format("-DCOTUNE_WARP_SIZE={}", warp_size));
  out.push_back(fmt::format("-DCOTUNE_THREADS_PER_BLOCK={}", launch.threads(warp_size)));
  const block_dims block = launch.block_shape(warp_size);
  out.push_back(fmt::format("-DCOTUNE_BLOCK_X={}", block.x));
  out.push_back(fmt::format("-DCOTUNE_BLOCK_Y={}", block.y));
  out.push_back(fmt::format("-DCOTUNE_BLOCK_Z={}", block.z));
}

/// Options as one line of text, the way a compile error shows them.
[[nodiscard]] inline std::string options_text(const std::vector<std::string>& opts) {
  std::string shown;
  for (const auto& o : opts) shown += (shown.empty() ? "" : " ") + o;
  return shown;
}

/// The checks before a compile: a kernel name that is a C identifier, an entry. Throws cotune::error.
inline void check_kernel(const rtc_names& n, const kernel_source& k) {
  if (!is_identifier(k.name)) throw error(fmt::format("{}: kernel name '{}' must be a C identifier", n.backend, k.name));
  if (k.entry.empty())
    throw error(fmt::format("{}: kernel '{}' has no entry (a kernel name or name expression)", n.backend, k.name));
}

/// timeout_error for a compile cancelled before or while it ran.
[[nodiscard]] inline timeout_error compile_cancelled(const rtc_names& n, const kernel_source& k, const config& c,
                                                     const std::string& arch) {
  return timeout_error(
      fmt::format("{}: compiling kernel '{}' with config {{{}}} for {} was cancelled", n.backend, k.name, c.text(), arch));
}

/// Throws what stopped or broke a compile: timeout_error (past the deadline of `timeout_ms`, or a stop
/// request) or compiler_crashed (the compiler died: not the kernel's fault). Returns when the compile
/// ran to its end, successful or not.
inline void throw_if_stopped_or_crashed(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                        const config& c, const std::string& arch, std::int64_t timeout_ms) {
  if (out.stopped == rtc_output::stop_cause::deadline)
    throw timeout_error(fmt::format("{}: compiling kernel '{}' with config {{{}}} for {} took longer than "
                                    "COTUNE_COMPILE_TIMEOUT_MS = {} ms and was stopped; raise the limit (0 = none) "
                                    "if the kernel needs longer",
                                    n.backend, k.name, c.text(), arch, timeout_ms));
  if (out.stopped == rtc_output::stop_cause::stop_request) throw compile_cancelled(n, k, c, arch);
  if (!out.ok && out.crashed)
    throw compiler_crashed(fmt::format("{}: {} {} crashed while compiling kernel '{}' with config {{{}}} for {} ({}): "
                                       "this is not an error in the kernel",
                                       n.backend, n.compiler, n.compiler_version, k.name, c.text(), arch, out.error),
                           out.log);
}

/// The compile_error of a kernel that does not compile: the compiler's result and log, the config,
/// the target and every option.
[[nodiscard]] inline compile_error does_not_compile(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                                    const config& c, const std::string& arch,
                                                    const std::vector<std::string>& opts) {
  return compile_error(fmt::format("{}: kernel '{}' (entry '{}') with config {{{}}} does not compile for {} with {} {}: "
                                   "{}; options: {}\n{}",
                                   n.backend, k.name, k.entry, c.text(), arch, n.compiler, n.compiler_version,
                                   out.error, options_text(opts), out.log),
                       out.log);
}

/// What the binary cache keeps beside a GPU binary's bytes: its symbol, target and compile log, and
/// whether the bytes are PTX text.
struct rtc_meta {
  std::string lowered_name;
  std::string arch;
  std::string log;
  bool is_ptx = false;

  [[nodiscard]] std::string json() const {
    json_writer w;
    w.begin_object().field("lowered_name", lowered_name).field("arch", arch).field("is_ptx", is_ptx);
    w.field("log", log).end_object();
    return w.str();
  }
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
inline void check_loaded_kernel(std::string_view backend, const config& c, const kernel_resources& k,
                                const device_resources& d, const block_dims& block, const launch_limits& limits) {
  if (k.threads <= 0)
    throw launch_error(fmt::format("{}: config {{{}}} asks for {} threads per block; use num_warps >= 1 or "
                                   "threads_per_block >= 1",
                                   backend, c.text(), k.threads));
  if (k.threads > d.max_threads_per_block) throw out_of_resources("threads per block", k.threads, d.max_threads_per_block);
  if (d.max_registers_per_block) {
    const std::int64_t registers = std::int64_t{k.registers} * k.threads;
    if (registers > *d.max_registers_per_block) throw out_of_resources("registers", registers, *d.max_registers_per_block);
  }
  if (k.kernel_max_threads > 0 && k.threads > k.kernel_max_threads)
    throw out_of_resources(fmt::format("threads per block (at {} registers per thread)", k.registers), k.threads,
                           k.kernel_max_threads);
  if (k.static_shared_bytes > d.max_static_shared)
    throw out_of_resources(std::string(d.shared_name), k.static_shared_bytes, d.max_static_shared);
  check_block(block, limits, k.kernel_max_threads); // every dimension, named with its limit
}

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
[[nodiscard]] inline std::string launch_text(std::string_view kernel, std::string_view config_text,
                                             const launch_grid& grid, const block_dims& b) {
  return fmt::format("launching kernel '{}' with config {{{}}} (grid {}x{}x{}, block {}x{}x{}, {} bytes of dynamic "
                     "shared memory)",
                     kernel, config_text, grid.x, grid.y, grid.z, b.x, b.y, b.z, grid.shared_bytes);
}

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/rtc_compile.ipp>
#endif
