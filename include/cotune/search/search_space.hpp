#pragma once
/// \file `cotune::search_space`: the geometry a search strategy walks, recovered from a candidate list.
/// Each parameter name is an axis whose positions are the parameter's distinct values in order
/// (numbers by value, then booleans, then strings), and so is each launch option the candidates set
/// (`launch.num_warps`, `launch.num_stages`, `launch.num_ctas`, `launch.maxnreg`,
/// `launch.threads_per_block`, `launch.block_x/y/z`: configs that differ only in warps or stages are
/// different points); each candidate is a point. The list need not be
/// a full product: `where` constraints and pruning leave holes, and neighbours step over them.
///
/// Each axis has a kind (core/param_kind.hpp): an ordered axis is stepped along (one position up or
/// down), a categorical one is not: every other value is one step away, and two different values are
/// a whole axis apart. Strategies never use a categorical axis's positions as distances.
///
///     cotune::search_space s(candidates);
///     for (std::size_t j : s.neighbours(i)) ...   // candidates one step away on one axis

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/core/param_kind.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/core/value.hpp>

namespace cotune {

class search_space {
public:
  /// One parameter and its distinct values, in order.
  struct axis {
    std::string name;
    std::vector<value> values;
    /// Parameters or launch options that always move with this one (a parameter and the launch option
    /// it sets, e.g. WARPS and launch.num_warps): one axis, or a step on either alone would find nothing.
    std::vector<std::string> tied = {};
    /// Ordered: positions are an order to step along; categorical: unrelated values.
    param_kind kind = param_kind::ordered;

    [[nodiscard]] bool categorical() const noexcept { return kind == param_kind::categorical; }
  };

  /// The geometry of `candidates`; `kinds` declares parameters' kinds (by name; launch options as
  /// `launch.num_warps`, ...). Undeclared axes: categorical if any of their values is a string or a
  /// boolean, else ordered. An axis tied to a categorical one is categorical.
  COTUNE_DECL explicit search_space(const std::vector<config>& candidates, const param_kinds& kinds = {});

  /// A config's coordinates by name: its parameters, and its launch options as `launch.*` (a name no
  /// parameter can take, parameters being C identifiers). Options a config leaves unset are absent.
  [[nodiscard]] COTUNE_DECL static std::map<std::string, value> features_of(const config& c);

  [[nodiscard]] std::size_t size() const noexcept { return coords_.size(); }
  [[nodiscard]] std::size_t dimensions() const noexcept { return axes_.size(); }
  [[nodiscard]] const std::vector<axis>& axes() const noexcept { return axes_; }
  /// Candidate `i`'s position on each axis (-1 where it lacks the parameter).
  [[nodiscard]] const std::vector<int>& coords(std::size_t i) const { return coords_.at(i); }

  /// The candidate at exactly these positions, if the list holds one.
  [[nodiscard]] COTUNE_DECL std::optional<std::size_t> find(const std::vector<int>& p) const;

  /// Walks from candidate `i` along axis `d` in direction `dir` (-1 or +1), the other positions as
  /// `i`'s, calling `visit(j)` for each candidate the list holds there, nearest first, while it returns
  /// true (holes left by constraints are stepped over). Nothing is visited where `i` lacks the axis.
  /// Geometry only: on a categorical axis "nearest" means nothing, so strategies use `along` there.
  template <class Visit>
  void walk(std::size_t i, std::size_t d, int dir, Visit visit) const {
    std::vector<int> p = coords(i);
    const int size = static_cast<int>(axes_.at(d).values.size());
    if (p[d] < 0) return;
    for (int q = p[d] + dir; q >= 0 && q < size; q += dir) {
      p[d] = q;
      if (auto j = find(p); j && !visit(*j)) return;
    }
  }

  /// The candidates that differ from `i` on axis `d` only (any position), in candidate order.
  [[nodiscard]] COTUNE_DECL std::vector<std::size_t> along(std::size_t i, std::size_t d) const;

  /// The candidates one step from `i` on one axis, the others unchanged: on an ordered axis, in each
  /// direction, the nearest position the list holds (so a hole left by a constraint is stepped over);
  /// on a categorical axis, every other value the list holds (in candidate order).
  [[nodiscard]] COTUNE_DECL std::vector<std::size_t> neighbours(std::size_t i) const;

  /// Distance between two points: the sum over axes of the position difference as a fraction of the
  /// axis's length (so that an axis of 2 values weighs as much as one of 20); a different value of a
  /// categorical axis, or a missing parameter, is one full axis away.
  [[nodiscard]] COTUNE_DECL double distance(const std::vector<int>& a, const std::vector<int>& b) const;

  /// The candidate nearest to the point `p` among those `allowed` accepts (ties: the lower index).
  template <class Allowed>
  [[nodiscard]] std::optional<std::size_t> nearest(const std::vector<int>& p, Allowed allowed) const {
    if (auto j = find(p); j && allowed(*j)) return j;
    std::optional<std::size_t> best;
    double best_d = 0;
    for (std::size_t i = 0; i < coords_.size(); ++i) {
      if (!allowed(i)) continue;
      const double d = distance(p, coords_[i]);
      if (!best || d < best_d) {
        best = i;
        best_d = d;
      }
    }
    return best;
  }

private:
  /// Merges axes whose positions determine each other on every candidate (a one-to-one map): the later
  /// one is dropped and named in the kept one's `tied`; a parameter is kept over a launch option.
  COTUNE_DECL void tie_axes();

  /// Numbers by value (integers and floating values together), then booleans, then strings.
  COTUNE_DECL static bool before(const value& a, const value& b);

  std::vector<axis> axes_;
  std::vector<std::vector<int>> coords_;
  std::map<std::vector<int>, std::size_t> index_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search_space.ipp>
#endif
