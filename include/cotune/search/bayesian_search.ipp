#pragma once
/// \file The bodies of search/bayesian_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cotune/search/bayesian_search.hpp>

namespace cotune {

class bayesian_search::session final : public search_session {
public:
  session(const search_space& sp, const search_settings& st, std::size_t depth, const bayesian_search& o)
      : search_session(sp, st, default_search_evaluations(sp.size()), depth),
        startup_(std::max<std::size_t>(o.startup_, 2)), gamma_(o.gamma_), explore_(o.explore_) {}

protected:
  std::vector<std::size_t> do_propose(std::size_t want) override {
    std::vector<std::size_t> out;
    auto fresh = [&](std::size_t i) { return !taken(i) && std::find(out.begin(), out.end(), i) == out.end(); };
    std::vector<search_outcome> valid;
    std::vector<std::size_t> bad;
    for (const auto& h : history())
      if (h.valid()) valid.push_back(h);
      else bad.push_back(h.index);
    const bool model = history().size() >= startup_ && !valid.empty();
    if (!model) {
      while (out.size() < want)
        if (auto r = random_untaken(); r && fresh(*r)) out.push_back(*r);
        else break;
      return out;
    }
    std::stable_sort(valid.begin(), valid.end(), [](auto& a, auto& b) { return a.time_ms < b.time_ms; });
    const auto n_good = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(gamma_ * static_cast<double>(valid.size()))));
    std::vector<std::size_t> good;
    for (std::size_t k = 0; k < valid.size(); ++k) (k < n_good ? good : bad).push_back(valid[k].index);
    const auto l = densities(good), g0 = densities(bad);
    auto g = g0;
    while (out.size() < want) {
      if (detail::unit(rng()) < explore_) {
        if (auto r = random_untaken(); r && fresh(*r)) {
          out.push_back(*r);
          continue;
        }
      }
      std::size_t best_i = space().size();
      double best_s = -INFINITY;
      for (std::size_t i = 0; i < space().size(); ++i) {
        if (!fresh(i)) continue;
        double s = 0;
        const auto& p = space().coords(i);
        for (std::size_t d = 0; d < p.size(); ++d) s += std::log(at(l, d, p[d])) - std::log(at(g, d, p[d]));
        if (s > best_s) {
          best_s = s;
          best_i = i;
        }
      }
      if (best_i == space().size()) break;
      out.push_back(best_i);
      add(g, best_i, bad.size() + out.size()); // the liar: the next pick looks elsewhere
    }
    return out;
  }

private:
  /// Per axis, unnormalised weights per position (the last slot: the parameter is missing).
  using density = std::vector<std::vector<double>>;

  density densities(const std::vector<std::size_t>& points) const {
    density w(space().dimensions());
    for (std::size_t d = 0; d < w.size(); ++d) w[d].assign(space().axes()[d].values.size() + 1, 1.0);
    for (std::size_t i : points)
      for (std::size_t d = 0; d < w.size(); ++d) spread(w[d], space().coords(i)[d], 1.0);
    for (auto& axis : w) normalise(axis);
    return w;
  }
  /// Adds one point to a normalised density that holds `count` points.
  void add(density& w, std::size_t i, std::size_t count) const {
    const double n = static_cast<double>(count);
    for (std::size_t d = 0; d < w.size(); ++d) {
      for (double& x : w[d]) x *= n;
      spread(w[d], space().coords(i)[d], 1.0);
      normalise(w[d]);
    }
  }
  static void spread(std::vector<double>& axis, int at, double weight) {
    if (at < 0) {
      axis.back() += weight;
      return;
    }
    const int len = static_cast<int>(axis.size()) - 1;
    for (int k = -2; k <= 2; ++k)
      if (at + k >= 0 && at + k < len) axis[static_cast<std::size_t>(at + k)] += weight / (1 << std::abs(k));
  }
  static void normalise(std::vector<double>& axis) {
    double s = 0;
    for (double x : axis) s += x;
    for (double& x : axis) x /= s;
  }
  static double at(const density& w, std::size_t d, int pos) {
    return pos < 0 ? w[d].back() : w[d][static_cast<std::size_t>(pos)];
  }

  std::size_t startup_;
  double gamma_, explore_;
};

COTUNE_DECL std::unique_ptr<search_session>
bayesian_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, *this);
}

} // namespace cotune
