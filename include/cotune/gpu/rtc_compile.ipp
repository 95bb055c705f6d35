#pragma once
/// \file The bodies of gpu/rtc_compile.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include <cotune/gpu/rtc_compile.hpp>

namespace cotune::gpu {

COTUNE_DECL std::optional<rtc_meta> rtc_meta::from_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) return std::nullopt;
  std::string_view lowered, arch, log;
  bool is_ptx = false;
  if (root["lowered_name"].get(lowered) != simdjson::SUCCESS || root["arch"].get(arch) != simdjson::SUCCESS ||
      root["log"].get(log) != simdjson::SUCCESS)
    return std::nullopt;
  if (auto p = root["is_ptx"]; p.error() == simdjson::SUCCESS && p.get(is_ptx) != simdjson::SUCCESS)
    return std::nullopt;
  return rtc_meta{std::string(lowered), std::string(arch), std::string(log), is_ptx};
}


COTUNE_DECL std::vector<std::string> split_options(const std::string& text) {
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

COTUNE_DECL void add_config_macros(std::vector<std::string>& out, const config& c, int warp_size, bool warp_size_macro) {
  for (const auto& [name, v] : c.params()) out.push_back(fmt::format(COTUNE_FMT("-D{}={}"), name, v.macro_text()));
  const auto& launch = c.launch();
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_NUM_WARPS={}"), launch.num_warps));
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_NUM_STAGES={}"), launch.num_stages));
  if (warp_size_macro) out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_WARP_SIZE={}"), warp_size));
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_THREADS_PER_BLOCK={}"), launch.threads(warp_size)));
  const block_dims block = launch.block_shape(warp_size);
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_BLOCK_X={}"), block.x));
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_BLOCK_Y={}"), block.y));
  out.push_back(fmt::format(COTUNE_FMT("-DCOTUNE_BLOCK_Z={}"), block.z));
}

COTUNE_DECL std::string options_text(const std::vector<std::string>& opts) {
  std::string shown;
  for (const auto& o : opts) shown += (shown.empty() ? "" : " ") + o;
  return shown;
}

COTUNE_DECL void check_kernel(const rtc_names& n, const kernel_source& k) {
  if (!is_identifier(k.name))
    throw error(fmt::format(COTUNE_FMT("{}: kernel name '{}' must be a C identifier"), n.backend, k.name));
  if (k.entry.empty())
    throw error(
        fmt::format(COTUNE_FMT("{}: kernel '{}' has no entry (a kernel name or name expression)"), n.backend, k.name));
}

COTUNE_DECL timeout_error compile_cancelled(const rtc_names& n, const kernel_source& k, const config& c,
                                                     const std::string& arch) {
  return timeout_error(fmt::format(COTUNE_FMT("{}: compiling kernel '{}' with config {{{}}} for {} was cancelled"),
                                   n.backend, k.name, c.text(), arch));
}

COTUNE_DECL void throw_if_stopped_or_crashed(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                        const config& c, const std::string& arch, std::int64_t timeout_ms) {
  if (out.stopped == rtc_output::stop_cause::deadline)
    throw timeout_error(
        fmt::format(COTUNE_FMT("{}: compiling kernel '{}' with config {{{}}} for {} took longer than "
                               "COTUNE_COMPILE_TIMEOUT_MS = {} ms and was stopped; raise the limit (0 = none) "
                               "if the kernel needs longer"),
                    n.backend, k.name, c.text(), arch, timeout_ms));
  if (out.stopped == rtc_output::stop_cause::stop_request) throw compile_cancelled(n, k, c, arch);
  if (!out.ok && out.crashed)
    throw compiler_crashed(
        fmt::format(COTUNE_FMT("{}: {} {} crashed while compiling kernel '{}' with config {{{}}} for {} ({}): "
                               "this is not an error in the kernel"),
                    n.backend, n.compiler, n.compiler_version, k.name, c.text(), arch, out.error),
        out.log);
}

COTUNE_DECL compile_error does_not_compile(const rtc_output& out, const rtc_names& n, const kernel_source& k,
                                                    const config& c, const std::string& arch,
                                                    const std::vector<std::string>& opts) {
  return compile_error(
      fmt::format(COTUNE_FMT("{}: kernel '{}' (entry '{}') with config {{{}}} does not compile for {} with {} {}: "
                             "{}; options: {}\n{}"),
                  n.backend, k.name, k.entry, c.text(), arch, n.compiler, n.compiler_version, out.error,
                  options_text(opts), out.log),
      out.log);
}

COTUNE_DECL void check_loaded_kernel(std::string_view backend, const config& c, const kernel_resources& k,
                                const device_resources& d, const block_dims& block, const launch_limits& limits) {
  if (k.threads <= 0)
    throw launch_error(fmt::format(COTUNE_FMT("{}: config {{{}}} asks for {} threads per block; use num_warps >= 1 or "
                                              "threads_per_block >= 1"),
                                   backend, c.text(), k.threads));
  if (k.threads > d.max_threads_per_block) throw out_of_resources("threads per block", k.threads, d.max_threads_per_block);
  if (d.max_registers_per_block) {
    const std::int64_t registers = std::int64_t{k.registers} * k.threads;
    if (registers > *d.max_registers_per_block) throw out_of_resources("registers", registers, *d.max_registers_per_block);
  }
  if (k.kernel_max_threads > 0 && k.threads > k.kernel_max_threads)
    throw out_of_resources(fmt::format(COTUNE_FMT("threads per block (at {} registers per thread)"), k.registers),
                           k.threads, k.kernel_max_threads);
  if (k.static_shared_bytes > d.max_static_shared)
    throw out_of_resources(std::string(d.shared_name), k.static_shared_bytes, d.max_static_shared);
  check_block(block, limits, k.kernel_max_threads); // every dimension, named with its limit
}

COTUNE_DECL std::string launch_text(std::string_view kernel, std::string_view config_text,
                                             const launch_grid& grid, const block_dims& b) {
  return fmt::format(
      COTUNE_FMT("launching kernel '{}' with config {{{}}} (grid {}x{}x{}, block {}x{}x{}, {} bytes of dynamic "
                 "shared memory)"),
      kernel, config_text, grid.x, grid.y, grid.z, b.x, b.y, b.z, grid.shared_bytes);
}

COTUNE_DECL std::string rtc_meta::json() const {
  json_writer w;
  w.begin_object().field("lowered_name", lowered_name).field("arch", arch).field("is_ptx", is_ptx);
  w.field("log", log).end_object();
  return w.str();
}

} // namespace cotune::gpu
