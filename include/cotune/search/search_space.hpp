#pragma once
/// \file `cotune::search_space`: the geometry a search strategy walks, recovered from a candidate list.
/// Each parameter name is an axis whose positions are the parameter's distinct values in order
/// (numbers by value, then booleans, then strings), and so is each launch option the candidates set
/// (`launch.num_warps`, `launch.num_stages`, `launch.num_ctas`, `launch.maxnreg`,
/// `launch.threads_per_block`, `launch.block_x/y/z`: configs that differ only in warps or stages are
/// different points); each candidate is a point. The list need not be
/// a full product: `where` constraints and pruning leave holes, and neighbours step over them.
///
///     cotune::search_space s(candidates);
///     for (std::size_t j : s.neighbours(i)) ...   // candidates one step away on one axis

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
  };

  explicit search_space(const std::vector<config>& candidates) : coords_(candidates.size()) {
    std::vector<std::map<std::string, value>> features;
    features.reserve(candidates.size());
    for (const auto& c : candidates) features.push_back(features_of(c));
    std::map<std::string, std::vector<value>> seen;
    for (const auto& f : features)
      for (const auto& [name, v] : f) seen[name].push_back(v);
    for (auto& [name, vs] : seen) {
      std::sort(vs.begin(), vs.end(), before);
      vs.erase(std::unique(vs.begin(), vs.end()), vs.end());
      // A launch option every candidate shares is no direction to search in (a host backend's configs
      // all keep the defaults); a parameter is an axis even then, as it always was.
      const std::string& axis_name = name; // clang 14 cannot capture a structured binding
      if (axis_name.starts_with("launch.") && vs.size() < 2 &&
          std::all_of(features.begin(), features.end(), [&](const auto& f) { return f.contains(axis_name); }))
        continue;
      axes_.push_back({name, std::move(vs)});
    }
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      auto& p = coords_[i];
      p.assign(axes_.size(), -1); // -1: the candidate lacks this parameter
      for (std::size_t d = 0; d < axes_.size(); ++d)
        if (auto it = features[i].find(axes_[d].name); it != features[i].end()) {
          const auto& vs = axes_[d].values;
          p[d] = static_cast<int>(std::lower_bound(vs.begin(), vs.end(), it->second, before) - vs.begin());
        }
    }
    tie_axes();
    for (std::size_t i = 0; i < candidates.size(); ++i) index_.emplace(coords_[i], i); // a duplicate keeps its first index
  }

  /// A config's coordinates by name: its parameters, and its launch options as `launch.*` (a name no
  /// parameter can take, parameters being C identifiers). Options a config leaves unset are absent.
  [[nodiscard]] static std::map<std::string, value> features_of(const config& c) {
    std::map<std::string, value> out;
    for (const auto& [name, v] : c.params()) out.emplace(name, v);
    const launch_options& l = c.launch();
    out.emplace("launch.num_warps", value(l.num_warps));
    out.emplace("launch.num_stages", value(l.num_stages));
    out.emplace("launch.num_ctas", value(l.num_ctas));
    if (l.maxnreg) out.emplace("launch.maxnreg", value(*l.maxnreg));
    if (l.threads_per_block) out.emplace("launch.threads_per_block", value(*l.threads_per_block));
    if (l.block) {
      out.emplace("launch.block_x", value(static_cast<std::int64_t>(l.block->x)));
      out.emplace("launch.block_y", value(static_cast<std::int64_t>(l.block->y)));
      out.emplace("launch.block_z", value(static_cast<std::int64_t>(l.block->z)));
    }
    return out;
  }

  [[nodiscard]] std::size_t size() const noexcept { return coords_.size(); }
  [[nodiscard]] std::size_t dimensions() const noexcept { return axes_.size(); }
  [[nodiscard]] const std::vector<axis>& axes() const noexcept { return axes_; }
  /// Candidate `i`'s position on each axis (-1 where it lacks the parameter).
  [[nodiscard]] const std::vector<int>& coords(std::size_t i) const { return coords_.at(i); }

  /// The candidate at exactly these positions, if the list holds one.
  [[nodiscard]] std::optional<std::size_t> find(const std::vector<int>& p) const {
    auto it = index_.find(p);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  /// Walks from candidate `i` along axis `d` in direction `dir` (-1 or +1), the other positions as
  /// `i`'s, calling `visit(j)` for each candidate the list holds there, nearest first, while it returns
  /// true (holes left by constraints are stepped over). Nothing is visited where `i` lacks the axis.
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

  /// The candidates one step from `i` on one axis, the others unchanged: on each axis and in each
  /// direction, the nearest position the list holds (so a hole left by a constraint is stepped over).
  [[nodiscard]] std::vector<std::size_t> neighbours(std::size_t i) const {
    std::vector<std::size_t> out;
    for (std::size_t d = 0; d < axes_.size(); ++d)
      for (int dir : {-1, 1})
        walk(i, d, dir, [&](std::size_t j) {
          out.push_back(j);
          return false;
        });
    return out;
  }

  /// Distance between two points: the sum over axes of the position difference as a fraction of the
  /// axis's length (so that an axis of 2 values weighs as much as one of 20); a missing parameter
  /// is one full axis away.
  [[nodiscard]] double distance(const std::vector<int>& a, const std::vector<int>& b) const {
    double s = 0;
    for (std::size_t d = 0; d < axes_.size(); ++d) {
      if (a[d] == b[d]) continue;
      if (a[d] < 0 || b[d] < 0) {
        s += 1;
        continue;
      }
      const double len = static_cast<double>(std::max<std::size_t>(1, axes_[d].values.size() - 1));
      s += std::abs(a[d] - b[d]) / len;
    }
    return s;
  }

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
  void tie_axes() {
    auto one_to_one = [&](std::size_t a, std::size_t b) {
      std::map<int, int> ab, ba;
      for (const auto& p : coords_)
        if (ab.try_emplace(p[a], p[b]).first->second != p[b] || ba.try_emplace(p[b], p[a]).first->second != p[a]) return false;
      return true;
    };
    auto launch = [&](std::size_t d) { return axes_[d].name.starts_with("launch."); };
    std::vector<bool> drop(axes_.size(), false);
    for (std::size_t a = 0; a < axes_.size(); ++a)
      for (std::size_t b = a + 1; b < axes_.size() && !drop[a]; ++b) {
        if (drop[b] || !one_to_one(a, b)) continue;
        const bool keep_b = launch(a) && !launch(b);
        const std::size_t kept = keep_b ? b : a, gone = keep_b ? a : b;
        axes_[kept].tied.push_back(axes_[gone].name);
        for (auto& t : axes_[gone].tied) axes_[kept].tied.push_back(std::move(t));
        drop[gone] = true;
      }
    if (std::find(drop.begin(), drop.end(), true) == drop.end()) return;
    std::vector<axis> kept;
    for (std::size_t d = 0; d < axes_.size(); ++d)
      if (!drop[d]) kept.push_back(std::move(axes_[d]));
    for (auto& p : coords_) {
      std::vector<int> q;
      for (std::size_t d = 0; d < p.size(); ++d)
        if (!drop[d]) q.push_back(p[d]);
      p = std::move(q);
    }
    axes_ = std::move(kept);
  }

  /// Numbers by value (integers and floating values together), then booleans, then strings.
  static bool before(const value& a, const value& b) {
    auto rank = [](const value& v) { return v.is_int() || v.is_double() ? 0 : v.is_bool() ? 1 : 2; };
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (rank(a) == 0) {
      if (a.as_double() != b.as_double()) return a.as_double() < b.as_double();
      return a.is_int() && !b.is_int(); // 2 before 2.0: distinct values, one fixed order
    }
    if (rank(a) == 1) return !a.as_bool() && b.as_bool();
    return a.as_string() < b.as_string();
  }

  std::vector<axis> axes_;
  std::vector<std::vector<int>> coords_;
  std::map<std::vector<int>, std::size_t> index_;
};

} // namespace cotune
