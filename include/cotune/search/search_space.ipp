#pragma once
/// \file The bodies of search/search_space.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <cotune/search/search_space.hpp>

namespace cotune {

COTUNE_DECL search_space::search_space(const std::vector<config>& candidates, const param_kinds& kinds)
    : coords_(candidates.size()) {
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
    const auto declared = kinds.find(name);
    const bool unordered = std::any_of(vs.begin(), vs.end(), [](const value& v) { return v.is_string() || v.is_bool(); });
    const param_kind kind = declared != kinds.end() ? declared->second
                            : unordered             ? param_kind::categorical
                                                    : param_kind::ordered;
    axes_.push_back({name, std::move(vs), {}, kind});
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

COTUNE_DECL std::map<std::string, value> search_space::features_of(const config& c) {
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

COTUNE_DECL std::optional<std::size_t> search_space::find(const std::vector<int>& p) const {
  auto it = index_.find(p);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

COTUNE_DECL std::vector<std::size_t> search_space::along(std::size_t i, std::size_t d) const {
  std::vector<int> p = coords(i);
  std::vector<std::size_t> out;
  if (p.at(d) < 0) return out;
  const int own = p[d];
  for (int q = 0; q < static_cast<int>(axes_[d].values.size()); ++q) {
    if (q == own) continue;
    p[d] = q;
    if (auto j = find(p)) out.push_back(*j);
  }
  std::sort(out.begin(), out.end());
  return out;
}

COTUNE_DECL std::vector<std::size_t> search_space::neighbours(std::size_t i) const {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < axes_.size(); ++d) {
    if (axes_[d].categorical()) {
      for (std::size_t j : along(i, d)) out.push_back(j);
      continue;
    }
    for (int dir : {-1, 1})
      walk(i, d, dir, [&](std::size_t j) {
        out.push_back(j);
        return false;
      });
  }
  return out;
}

COTUNE_DECL double search_space::distance(const std::vector<int>& a, const std::vector<int>& b) const {
  double s = 0;
  for (std::size_t d = 0; d < axes_.size(); ++d) {
    if (a[d] == b[d]) continue;
    if (a[d] < 0 || b[d] < 0 || axes_[d].categorical()) {
      s += 1;
      continue;
    }
    const double len = static_cast<double>(std::max<std::size_t>(1, axes_[d].values.size() - 1));
    s += std::abs(a[d] - b[d]) / len;
  }
  return s;
}

COTUNE_DECL void search_space::tie_axes() {
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
      if (axes_[gone].categorical()) axes_[kept].kind = param_kind::categorical;
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

COTUNE_DECL bool search_space::before(const value& a, const value& b) {
  auto rank = [](const value& v) { return v.is_int() || v.is_double() ? 0 : v.is_bool() ? 1 : 2; };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (rank(a) == 0) {
    if (a.as_double() != b.as_double()) return a.as_double() < b.as_double();
    return a.is_int() && !b.is_int(); // 2 before 2.0: distinct values, one fixed order
  }
  if (rank(a) == 1) return !a.as_bool() && b.as_bool();
  return a.as_string() < b.as_string();
}

} // namespace cotune
