#pragma once
/// \file The bodies of batch/job_geometry.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <fmt/core.h>

#include <cotune/batch/job_geometry.hpp>

namespace cotune::batch {

COTUNE_DECL std::optional<std::int64_t> instance::find(std::string_view name) const {
  for (const auto& [n, v] : vars)
    if (n == name) return v;
  return std::nullopt;
}

COTUNE_DECL std::string instance::text() const {
  std::string out;
  for (const auto& [n, v] : vars) out += fmt::format(COTUNE_FMT("{}{}={}"), out.empty() ? "" : ", ", n, v);
  return out;
}

COTUNE_DECL void set_launch_option(launch_options& lo, std::string_view name, int v) {
  if (name == "num_warps") lo.num_warps = v;
  else if (name == "num_stages") lo.num_stages = v;
  else if (name == "num_ctas") lo.num_ctas = v;
  else if (name == "maxnreg") lo.maxnreg = v;
  else if (name == "threads_per_block") lo.threads_per_block = v;
  else
    throw error(fmt::format(COTUNE_FMT("'{}' is not a launch option"), name));
}

COTUNE_DECL std::optional<std::int64_t> config_variable(const config& c, std::string_view name,
                                                        bool with_launch_options) {
  if (const value* v = c.find(name)) {
    if (v->is_int()) return v->as_int();
    if (v->is_bool()) return v->as_bool() ? 1 : 0;
    return std::nullopt;
  }
  if (!with_launch_options) return std::nullopt;
  const launch_options& lo = c.launch();
  if (name == "num_warps") return lo.num_warps;
  if (name == "num_stages") return lo.num_stages;
  if (name == "num_ctas") return lo.num_ctas;
  if (name == "maxnreg" && lo.maxnreg) return *lo.maxnreg;
  if (name == "threads_per_block" && lo.threads_per_block) return *lo.threads_per_block;
  return std::nullopt;
}

COTUNE_DECL std::optional<block_dims> launch_geometry::block_of(const config& c) const {
  if (block.empty()) return std::nullopt;
  int dims[3] = {1, 1, 1};
  for (std::size_t i = 0; i < block.size(); ++i)
    dims[i] = static_cast<int>(dimension(block[i], block_where, i, c, [&](std::string_view n) {
      return config_variable(c, n);
    }, 1024, "block"));
  return block_dims{dims[0], dims[1], dims[2]};
}

COTUNE_DECL launch_grid launch_geometry::evaluate(const config& c, const expression::lookup& vars) const {
  auto names = [&](std::string_view n) -> std::optional<std::int64_t> {
    if (auto v = config_variable(c, n)) return v;
    return vars ? vars(n) : std::nullopt;
  };
  launch_grid g;
  unsigned* dims[3] = {&g.x, &g.y, &g.z};
  // 2^32 - 1: what a launch can carry; the device's own limits (2^31 - 1 x 65535 x 65535 on CUDA)
  // are checked at launch, where a candidate beyond them fails with the dimension named.
  for (std::size_t i = 0; i < grid.size(); ++i)
    *dims[i] = static_cast<unsigned>(dimension(grid[i], grid_where, i, c, names, 0xffffffffLL, "grid"));
  if (shared_bytes) {
    std::int64_t v = 0;
    try {
      v = shared_bytes->evaluate(names);
    } catch (const expression_error& e) {
      throw error(fmt::format(COTUNE_FMT("{}: {} (config {{{}}})"), shared_where, e.what(), c.text()));
    }
    if (v < 0 || v > 0xffffffffLL)
      throw error(fmt::format(COTUNE_FMT("{}: '{}' gives {} bytes for config {{{}}}; dynamic shared memory must be in "
                                         "[0, 2^32)"),
                              shared_where, shared_bytes->text(), v, c.text()));
    g.shared_bytes = static_cast<unsigned>(v);
  }
  return g;
}

COTUNE_DECL std::string launch_geometry::text() const {
  auto list = [](const std::vector<expression>& es) {
    std::string out;
    for (const auto& e : es) out += (out.empty() ? "" : ", ") + e.text();
    return out;
  };
  std::string out = fmt::format(COTUNE_FMT("grid ({})"), list(grid));
  out += block.empty() ? ", the config's block" : fmt::format(COTUNE_FMT(", block ({})"), list(block));
  if (shared_bytes) out += fmt::format(COTUNE_FMT(", {} bytes of dynamic shared memory"), shared_bytes->text());
  return out;
}

COTUNE_DECL std::int64_t launch_geometry::dimension(const expression& e, const std::string& where, std::size_t i,
                                                      const config& c, const expression::lookup& names,
                                                      std::int64_t limit, std::string_view what) {
  std::int64_t v = 0;
  try {
    v = e.evaluate(names);
  } catch (const expression_error& x) {
    throw error(
        fmt::format(COTUNE_FMT("{}[{}]: {} (config {{{}}}); {} dimensions may use the config's integer parameters "
                               "and launch options{}"),
                    where, i, x.what(), c.text(), what, what == "grid" ? " and the instance's variables" : ""));
  }
  if (v < 1 || v > limit)
    throw error(fmt::format(COTUNE_FMT("{}[{}]: '{}' gives {} for config {{{}}}; a {} dimension must be in [1, {}]"),
                            where, i, e.text(), v, c.text(), what, limit));
  return v;
}

COTUNE_DECL void derive_launch(config& c, const std::vector<derived_launch>& launch,
                               const launch_geometry* geometry) {
  launch_options lo = c.launch();
  for (const auto& d : launch) {
    std::int64_t v = 0;
    try {
      v = d.expr.evaluate([&](std::string_view n) { return config_variable(c, n); });
    } catch (const expression_error& e) {
      throw job_error(fmt::format(COTUNE_FMT("{}: {} (for config {{{}}}); launch options may use the integer axes"),
                                  d.where, e.what(), c.text()));
    }
    if (v < 1 || v > 1 << 20)
      throw job_error(
          fmt::format(COTUNE_FMT("{}: '{}' gives {} for config {{{}}}; a launch option must be in [1, 1048576]"),
                      d.where, d.expr.text(), v, c.text()));
    set_launch_option(lo, d.name, static_cast<int>(v));
  }
  c.with_launch(lo);
  if (!geometry) return;
  try {
    lo.block = geometry->block_of(c);
  } catch (const error& e) {
    throw job_error(e.what());
  }
  c.with_launch(lo);
}

} // namespace cotune::batch
