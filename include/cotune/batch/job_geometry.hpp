#pragma once
/// \file `cotune::batch::launch_geometry`: how a job's GPU kernel is launched, from its job file: launch
/// options given as axes (`"num_warps": [4, 8]`) or derived (`space.launch`), and the kernel's
/// `geometry`: the grid, an optional block shape and the dynamic shared memory, each an expression
/// over the config's integer parameters, its launch options and the instance's variables.
///
///     "geometry": {"grid": ["cdiv(N, BLOCK_N)", "cdiv(M, BLOCK_M)"],
///                  "shared_bytes": "num_stages * (BLOCK_M * (BLOCK_K + 8) + BLOCK_K * (BLOCK_N + 8)) * 2"}
///
/// Also here: what every part of a job file shares, `job_error` and `instance`.
///
/// The block is the config's (num_warps x 32 threads, or threads_per_block) unless `block` gives its
/// shape; as it is compiled into the kernel (COTUNE_BLOCK_X, __launch_bounds__), it may use the config
/// only. Grid and shared memory may also use the instance's variables, and are evaluated per launch.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/batch/expression.hpp>

namespace cotune::batch {

/// A job file that cannot be used: the message starts with `file:line:column: field:`.
class job_error : public error {
public:
  using error::error;
};

/// One problem instance: values of the job's variables (`{"M": 512, "N": 512, "K": 512}`).
struct instance {
  std::vector<std::pair<std::string, std::int64_t>> vars;
  std::string where; ///< `file:line:col: kernels[0].instances[3]`, for messages

  /// The value of variable `name`, or nothing.
  [[nodiscard]] COTUNE_DECL std::optional<std::int64_t> find(std::string_view name) const;
  /// `M=512, N=512`.
  [[nodiscard]] COTUNE_DECL std::string text() const;
};

/// A launch option derived from a config's parameters (`"num_warps": "BLOCK_M / 16"`).
struct derived_launch {
  std::string name; ///< num_warps, num_stages, num_ctas, maxnreg, threads_per_block
  expression expr;
  std::string where;
};

/// The launch options a job file can set, as axes or derived expressions (Triton's Config fields).
inline constexpr std::array<std::string_view, 5> launch_option_names = {"num_warps", "num_stages", "num_ctas",
                                                                        "maxnreg", "threads_per_block"};

[[nodiscard]] constexpr bool is_launch_option(std::string_view name) noexcept {
  for (auto n : launch_option_names)
    if (n == name) return true;
  return false;
}

/// Sets launch option `name` (one of launch_option_names) to `v`.
COTUNE_DECL void set_launch_option(launch_options& lo, std::string_view name, int v);

/// A config's integer value for `name`: its parameter (booleans as 0/1), else (unless
/// `with_launch_options` is false) its launch option (maxnreg and threads_per_block only when set), else nothing.
[[nodiscard]] COTUNE_DECL std::optional<std::int64_t> config_variable(const config& c, std::string_view name,
                                                                      bool with_launch_options = true);

/// A GPU kernel's launch geometry as its job file gives it (`geometry`, read by job_spec), with where
/// each part is written, for messages.
struct launch_geometry {
  std::vector<expression> grid;  ///< x, y, z (1 to 3; missing ones are 1)
  std::vector<expression> block; ///< empty: the config's block
  std::optional<expression> shared_bytes{};
  std::string grid_where, block_where, shared_where;

  /// The block shape for a config (set into its launch options), or nothing when `block` is not given.
  /// Throws cotune::error naming the field, the config and the fix.
  [[nodiscard]] COTUNE_DECL std::optional<block_dims> block_of(const config& c) const;

  /// The grid and dynamic shared memory of config `c` for an instance whose variables `vars` gives.
  /// Throws cotune::error naming the field, the config and the instance.
  [[nodiscard]] COTUNE_DECL launch_grid evaluate(const config& c, const expression::lookup& vars) const;

  /// `grid (cdiv(N, BLOCK_N), cdiv(M, BLOCK_M)), shared memory ...`, for a dry run.
  [[nodiscard]] COTUNE_DECL std::string text() const;

private:
  COTUNE_DECL static std::int64_t dimension(const expression& e, const std::string& where, std::size_t i,
                                            const config& c, const expression::lookup& names, std::int64_t limit,
                                            std::string_view what);
};

/// Sets config `c`'s derived launch options, then its block (from `geometry`, when it gives one).
/// Throws job_error naming the field and the config.
COTUNE_DECL void derive_launch(config& c, const std::vector<derived_launch>& launch, const launch_geometry* geometry);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/job_geometry.ipp>
#endif
