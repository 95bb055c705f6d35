#pragma once
/// \file The bodies of backend/launch_geometry.hpp's launch checks (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <cstdint>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

COTUNE_DECL void check_block(const block_dims& b, const launch_limits& l, std::int64_t kernel_max_threads) {
  const int dims[3] = {b.x, b.y, b.z};
  for (int i = 0; i < 3; ++i) {
    if (dims[i] < 1)
      throw launch_error(
          fmt::format(COTUNE_FMT("block dimension {} is {}; every block dimension must be at least 1 (block {}x{}x{})"),
                      detail::dimension_names[i], dims[i], b.x, b.y, b.z));
    if (dims[i] > l.max_block[i])
      throw out_of_resources(
          fmt::format(COTUNE_FMT("block dimension {} (block {}x{}x{})"), detail::dimension_names[i], b.x, b.y, b.z),
          dims[i], l.max_block[i]);
  }
  if (b.threads() > l.max_threads)
    throw out_of_resources(fmt::format(COTUNE_FMT("threads per block (block {}x{}x{})"), b.x, b.y, b.z), b.threads(),
                           l.max_threads);
  if (kernel_max_threads > 0 && b.threads() > kernel_max_threads)
    throw out_of_resources(fmt::format(COTUNE_FMT("threads per block for this kernel (block {}x{}x{}; registers and "
                                                  "__launch_bounds__ set the kernel's limit)"),
                                       b.x, b.y, b.z),
                           b.threads(), kernel_max_threads);
}

COTUNE_DECL void check_grid(const launch_grid& g, const launch_limits& l) {
  const unsigned dims[3] = {g.x, g.y, g.z};
  for (int i = 0; i < 3; ++i) {
    if (dims[i] == 0)
      throw launch_error(
          fmt::format(COTUNE_FMT("grid dimension {} is 0 (grid {}x{}x{}): a launch needs at least one block in "
                                 "each dimension; an empty problem should not be launched"),
                      detail::dimension_names[i], g.x, g.y, g.z));
    if (dims[i] > l.max_grid[i])
      throw out_of_resources(
          fmt::format(COTUNE_FMT("grid dimension {} (grid {}x{}x{})"), detail::dimension_names[i], g.x, g.y, g.z),
          dims[i], l.max_grid[i]);
  }
}

} // namespace cotune
