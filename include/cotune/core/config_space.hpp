#pragma once
/// \file `cotune::config_space`: candidate lists as cartesian products of axes, filtered by predicates.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/grid_expr.hpp>
#include <cotune/core/param_kind.hpp>

namespace cotune {

/// Builds a candidate list: the product of named parameter axes and launch-option axes, in the order
/// the axes were added (the last axis varies fastest), with derived values set in the order they were
/// added, keeping the configs every predicate accepts (predicates see the derived values).
///
///     auto configs = config_space{}
///         .axis("BLOCK", {16, 32, 64}).axis("UNROLL", {1, 2, 4})
///         .num_warps({4, 8})
///         .where([](const config& c) { return c.at("BLOCK").as_int() * c.at("UNROLL").as_int() <= 128; })
///         .build();
///
/// A number that selects between unrelated algorithms is declared categorical, so that a search steps
/// from any method to any other instead of along their numbers; the tuner takes the kinds:
///
///     auto space = config_space{}.categorical("METHOD", {0, 1, 2, 3}).axis("BLOCK", {64, 128});
///     options.kinds = space.kinds();
///
/// A 2-D kernel derives its block from its parameters instead of patching every config afterwards:
///
///     config_space{}.axis("BLOCK_X", {16, 32}).axis("BLOCK_Y", {4, 8}).axis("TILE", {1, 2})
///         .derive("block_x", p("BLOCK_X")).derive("block_y", p("BLOCK_Y"))
///         .derive("ROWS", p("BLOCK_Y") * p("TILE"))       // a parameter the kernel sees as a macro
///         .build();
class config_space {
public:
  /// Adds a parameter axis (ordered if its values are numbers, categorical if strings or booleans).
  COTUNE_DECL config_space& axis(std::string name, std::vector<value> values);
  /// Adds a parameter axis whose values are unrelated choices (param_kind::categorical), numbers too.
  COTUNE_DECL config_space& categorical(std::string name, std::vector<value> values);
  COTUNE_DECL config_space& num_warps(std::vector<int> values);
  COTUNE_DECL config_space& num_stages(std::vector<int> values);
  COTUNE_DECL config_space& num_ctas(std::vector<int> values);

  /// Sets `name` in every config from what the axes (and earlier derivations) gave it. `name` is a
  /// launch option (num_warps, num_stages, num_ctas, maxnreg, threads_per_block or its alias threads,
  /// block_x, block_y, block_z: the block's shape, which then decides its thread count) or else a
  /// parameter the kernel sees as a macro. `fn` is a function of the config returning a value, or an
  /// expression such as `p("BLOCK_X") * p("BLOCK_Y")`.
  template <class F>
    requires(grid_expression<F> || std::is_invocable_r_v<value, const F&, const config&>)
  config_space& derive(std::string name, F fn) {
    refuse_derived(name);
    derived_.push_back({std::move(name), [fn = std::move(fn)](const config& c) { return value(fn(c)); }});
    return *this;
  }

  /// Keeps only the configs for which `predicate` returns true.
  config_space& where(std::function<bool(const config&)> predicate) {
    predicates_.push_back(std::move(predicate));
    return *this;
  }

  /// Number of combinations before filtering.
  [[nodiscard]] std::size_t product_size() const noexcept {
    std::size_t n = axes_.empty() ? 0 : 1;
    for (const auto& a : axes_) n *= a.size;
    return n;
  }

  /// The kinds declared with `categorical` (for tune_options::kinds and search_space).
  [[nodiscard]] const param_kinds& kinds() const noexcept { return kinds_; }

  /// The filtered product. Throws if the predicates reject every combination.
  [[nodiscard]] COTUNE_DECL std::vector<config> build() const;

private:
  struct axis_entry {
    std::string name;
    std::function<void(config&, std::size_t)> apply;
    std::size_t size;
  };

  // A second axis of the same name would multiply the product while overwriting the first axis's
  // values: every candidate would appear several times.
  COTUNE_DECL void refuse_duplicate(const std::string& name) const;
  // A derived name must be an identifier, and neither an axis nor derived already.
  COTUNE_DECL void refuse_derived(const std::string& name) const;

  // An axis of a launch option (`member` of launch_options); the num_warps, num_stages and num_ctas axes.
  template <class Member>
  config_space& launch_axis(const char* name, std::vector<int> values, Member member);

  struct derived_entry {
    std::string name;
    std::function<value(const config&)> fn;
  };

  COTUNE_DECL static void apply_derived(config& c, const derived_entry& d);

  std::vector<axis_entry> axes_;
  std::vector<derived_entry> derived_;
  std::vector<std::function<bool(const config&)>> predicates_;
  param_kinds kinds_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/core/config_space.ipp>
#endif
