#pragma once
/// \file Where a GPU launch goes: `launch_grid` (3-D grid, optional 3-D block, dynamic shared memory),
/// the device limits it must respect, checks that name the dimension and the limit, and `grid()`,
/// which builds a grid from expressions over a config (core/grid_expr.hpp).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/grid_expr.hpp>
#include <cotune/detail/config.hpp>

namespace cotune {

/// Where a launch goes on a GPU: grid dimensions, dynamic shared memory and, optionally, the block.
/// Without `block` the block is the config's (`launch_options::block_shape`: its `block`, else
/// (threads, 1, 1)), so `launch_grid{.x = n / 256}` stays the 1-D form. The host backend ignores it.
struct launch_grid {
  unsigned x = 1, y = 1, z = 1;
  unsigned shared_bytes = 0;
  /// The block's shape for this launch, overriding the config's (its thread count must still fit
  /// the kernel's limit, which the config's thread count decided at load time).
  std::optional<block_dims> block{};

  /// The same grid with `bytes` of dynamic shared memory.
  [[nodiscard]] constexpr launch_grid with_shared(unsigned bytes) const noexcept {
    launch_grid g = *this;
    g.shared_bytes = bytes;
    return g;
  }
  /// The same grid with an explicit block.
  [[nodiscard]] constexpr launch_grid with_block(block_dims b) const noexcept {
    launch_grid g = *this;
    g.block = b;
    return g;
  }
  friend constexpr bool operator==(const launch_grid&, const launch_grid&) = default;
};

/// A device's launch limits. The defaults are CUDA's for every GPU since Volta (compute capability
/// 7.0 to 10.x: block 1024 x 1024 x 64 and 1024 threads, grid (2^31 - 1) x 65535 x 65535); backends
/// fill them from the device.
struct launch_limits {
  std::array<std::int64_t, 3> max_block{1024, 1024, 64};
  std::int64_t max_threads = 1024;
  std::array<std::int64_t, 3> max_grid{2147483647, 65535, 65535};
};

namespace detail {
inline constexpr const char* dimension_names[3] = {"x", "y", "z"};
}

/// Checks a block against the limits (each dimension, then the thread count against the device's
/// limit and, when given, the kernel's own `kernel_max_threads`). Throws out_of_resources naming the
/// dimension ("block dimension z") and its limit, launch_error for a dimension below 1.
COTUNE_DECL void check_block(const block_dims& b, const launch_limits& l, std::int64_t kernel_max_threads = 0);

/// Checks a grid's dimensions against the limits. Throws out_of_resources naming the dimension
/// ("grid dimension y") and its limit, launch_error for an empty dimension (0 blocks).
COTUNE_DECL void check_grid(const launch_grid& g, const launch_limits& l);

namespace detail {

template <class E>
[[nodiscard]] unsigned grid_dimension(const E& e, const config& c, int dim) {
  const std::int64_t n = eval(e, c);
  if (n < 0 || n > 0xffffffffLL)
    throw error(fmt::format("grid dimension {} is {} under config {{{}}}: it must lie in [0, 2^32)",
                            dimension_names[dim], n, c.text()));
  return static_cast<unsigned>(n);
}

} // namespace detail

/// A grid whose dimensions are expressions (or integers) evaluated under `c`:
///
///     .grid = [](const cotune::config& c, auto&, auto&, int w, int h) {
///       return cotune::grid(c, cdiv(w, p("BLOCK_X") * p("TILE_X")), cdiv(h, p("BLOCK_Y")));
///     }
///
/// Throws cotune::error naming the dimension and the config when one is negative or beyond 32 bits;
/// the device's own limits are checked at launch (check_grid).
template <class X, class Y = int, class Z = int>
  requires(detail::expr_operand<X> && detail::expr_operand<Y> && detail::expr_operand<Z>)
[[nodiscard]] launch_grid grid(const config& c, const X& x, const Y& y = 1, const Z& z = 1) {
  launch_grid g;
  g.x = detail::grid_dimension(x, c, 0);
  g.y = detail::grid_dimension(y, c, 1);
  g.z = detail::grid_dimension(z, c, 2);
  return g;
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/backend/launch_geometry.ipp>
#endif
