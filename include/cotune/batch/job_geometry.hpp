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

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/batch/expression.hpp>
#include <cotune/batch/json_location.hpp>

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

  [[nodiscard]] std::optional<std::int64_t> find(std::string_view name) const {
    for (const auto& [n, v] : vars)
      if (n == name) return v;
    return std::nullopt;
  }
  /// `M=512, N=512`.
  [[nodiscard]] std::string text() const {
    std::string out;
    for (const auto& [n, v] : vars) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", n, v);
    return out;
  }
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
inline void set_launch_option(launch_options& lo, std::string_view name, int v) {
  if (name == "num_warps") lo.num_warps = v;
  else if (name == "num_stages") lo.num_stages = v;
  else if (name == "num_ctas") lo.num_ctas = v;
  else if (name == "maxnreg") lo.maxnreg = v;
  else if (name == "threads_per_block") lo.threads_per_block = v;
  else throw error(fmt::format("'{}' is not a launch option", name));
}

/// A config's integer value for `name`: its parameter (booleans as 0/1), else (unless
/// `with_launch_options` is false) its launch option (maxnreg and threads_per_block only when set), else nothing.
[[nodiscard]] inline std::optional<std::int64_t> config_variable(const config& c, std::string_view name,
                                                                 bool with_launch_options = true) {
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

/// A GPU kernel's launch geometry as its job file gives it (`geometry`), with where each part is
/// written, for messages.
struct launch_geometry {
  std::vector<expression> grid;  ///< x, y, z (1 to 3; missing ones are 1)
  std::vector<expression> block; ///< empty: the config's block
  std::optional<expression> shared_bytes{};
  std::string grid_where, block_where, shared_where;

  /// The block shape for a config (set into its launch options), or nothing when `block` is not given.
  /// Throws cotune::error naming the field, the config and the fix.
  [[nodiscard]] std::optional<block_dims> block_of(const config& c) const {
    if (block.empty()) return std::nullopt;
    int dims[3] = {1, 1, 1};
    for (std::size_t i = 0; i < block.size(); ++i)
      dims[i] = static_cast<int>(dimension(block[i], block_where, i, c, [&](std::string_view n) {
        return config_variable(c, n);
      }, 1024, "block"));
    return block_dims{dims[0], dims[1], dims[2]};
  }

  /// The grid and dynamic shared memory of config `c` for an instance whose variables `vars` gives.
  /// Throws cotune::error naming the field, the config and the instance.
  [[nodiscard]] launch_grid evaluate(const config& c, const expression::lookup& vars) const {
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
        throw error(fmt::format("{}: {} (config {{{}}})", shared_where, e.what(), c.text()));
      }
      if (v < 0 || v > 0xffffffffLL)
        throw error(fmt::format("{}: '{}' gives {} bytes for config {{{}}}; dynamic shared memory must be in "
                                "[0, 2^32)",
                                shared_where, shared_bytes->text(), v, c.text()));
      g.shared_bytes = static_cast<unsigned>(v);
    }
    return g;
  }

  /// `grid (cdiv(N, BLOCK_N), cdiv(M, BLOCK_M)), shared memory ...`, for a dry run.
  [[nodiscard]] std::string text() const {
    auto list = [](const std::vector<expression>& es) {
      std::string out;
      for (const auto& e : es) out += (out.empty() ? "" : ", ") + e.text();
      return out;
    };
    std::string out = fmt::format("grid ({})", list(grid));
    out += block.empty() ? ", the config's block" : fmt::format(", block ({})", list(block));
    if (shared_bytes) out += fmt::format(", {} bytes of dynamic shared memory", shared_bytes->text());
    return out;
  }

private:
  static std::int64_t dimension(const expression& e, const std::string& where, std::size_t i, const config& c,
                                const expression::lookup& names, std::int64_t limit, std::string_view what) {
    std::int64_t v = 0;
    try {
      v = e.evaluate(names);
    } catch (const expression_error& x) {
      throw error(fmt::format("{}[{}]: {} (config {{{}}}); {} dimensions may use the config's integer parameters "
                              "and launch options{}",
                              where, i, x.what(), c.text(), what, what == "grid" ? " and the instance's variables" : ""));
    }
    if (v < 1 || v > limit)
      throw error(fmt::format("{}[{}]: '{}' gives {} for config {{{}}}; a {} dimension must be in [1, {}]", where, i,
                              e.text(), v, c.text(), what, limit));
    return v;
  }
};

/// Sets config `c`'s derived launch options, then its block (from `geometry`, when it gives one).
/// Throws job_error naming the field and the config.
inline void derive_launch(config& c, const std::vector<derived_launch>& launch, const launch_geometry* geometry) {
  launch_options lo = c.launch();
  for (const auto& d : launch) {
    std::int64_t v = 0;
    try {
      v = d.expr.evaluate([&](std::string_view n) { return config_variable(c, n); });
    } catch (const expression_error& e) {
      throw job_error(fmt::format("{}: {} (for config {{{}}}); launch options may use the integer axes", d.where,
                                  e.what(), c.text()));
    }
    if (v < 1 || v > 1 << 20)
      throw job_error(fmt::format("{}: '{}' gives {} for config {{{}}}; a launch option must be in [1, 1048576]",
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

/// Reads a kernel's `geometry` with the job reader `r` (its `object`, `field`, `required`, `expr`, `at`
/// and `fail`): `grid` (required) and `block` are an expression or a list of 1 to 3, `shared_bytes` one.
template <class Reader>
[[nodiscard]] launch_geometry read_geometry(const Reader& r, simdjson::dom::element e, const json_path& p) {
  auto o = r.object(e, p, {"grid", "block", "shared_bytes"});
  launch_geometry g;
  auto dims = [&](simdjson::dom::element d, const json_path& dp) {
    std::vector<expression> out;
    simdjson::dom::array a;
    if (d.get_array().get(a) != simdjson::SUCCESS) {
      out.push_back(r.expr(d, dp));
      return out;
    }
    if (a.size() < 1 || a.size() > 3)
      r.fail(dp, fmt::format("expected 1 to 3 dimensions (x, y, z), got {}", a.size()));
    std::size_t j = 0;
    for (auto x : a) {
      out.push_back(r.expr(x, dp[j]));
      ++j;
    }
    return out;
  };
  g.grid = dims(r.required(o, p, "grid", "the number of blocks: an expression, or a list of up to 3 (x, y, z), "
                                         "e.g. [\"cdiv(N, BLOCK_N)\", \"cdiv(M, BLOCK_M)\"]"),
                p / "grid");
  g.grid_where = r.at(p / "grid");
  if (auto b = r.field(o, "block")) {
    g.block = dims(*b, p / "block");
    g.block_where = r.at(p / "block");
  }
  if (auto sb = r.field(o, "shared_bytes")) {
    g.shared_bytes = r.expr(*sb, p / "shared_bytes");
    g.shared_where = r.at(p / "shared_bytes");
  }
  return g;
}

} // namespace cotune::batch
