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

namespace detail {

COTUNE_DECL parzen_model::parzen_model(const search_space& space, const std::vector<search_outcome>& history,
                                       double gamma)
    : space_(&space) {
  std::vector<search_outcome> valid;
  std::vector<std::size_t> good, bad;
  for (const auto& h : history)
    if (h.valid()) valid.push_back(h);
    else bad.push_back(h.index);
  std::stable_sort(valid.begin(), valid.end(), [](auto& a, auto& b) { return a.time_ms < b.time_ms; });
  const auto n_good = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(gamma * static_cast<double>(valid.size()))));
  for (std::size_t k = 0; k < valid.size(); ++k) (k < n_good ? good : bad).push_back(valid[k].index);
  good_ = densities(good);
  bad_ = densities(bad);
  bad_count_ = bad.size();
  log_ratio_.resize(good_.size());
  for (std::size_t d = 0; d < good_.size(); ++d) update_ratio(d);
}

COTUNE_DECL void parzen_model::update_ratio(std::size_t d) {
  auto& r = log_ratio_[d];
  r.resize(good_[d].size());
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = std::log(good_[d][k]) - std::log(bad_[d][k]);
}

COTUNE_DECL double parzen_model::score(std::size_t i) const {
  double s = 0;
  const auto& p = space_->coords(i);
  for (std::size_t d = 0; d < p.size(); ++d) {
    const std::size_t at = p[d] < 0 ? good_[d].size() - 1 : static_cast<std::size_t>(p[d]);
    s += log_ratio_[d][at];
  }
  return s;
}

COTUNE_DECL void parzen_model::lie(std::size_t i) {
  ++bad_count_;
  const double n = static_cast<double>(bad_count_);
  for (std::size_t d = 0; d < bad_.size(); ++d) {
    for (double& x : bad_[d]) x *= n;
    spread(bad_[d], d, space_->coords(i)[d]);
    normalise(bad_[d]);
    update_ratio(d);
  }
}

COTUNE_DECL auto parzen_model::densities(const std::vector<std::size_t>& points) const -> density {
  density w(space_->dimensions());
  for (std::size_t d = 0; d < w.size(); ++d) {
    // Points counted per position first, then spread once per position: the same sums (multiples of
    // 1/4, exact in a double) in O(points) rather than O(points x spread).
    const std::size_t len = space_->axes()[d].values.size();
    std::vector<double> count(len + 1, 0.0);
    for (std::size_t i : points) {
      const int at = space_->coords(i)[d];
      count[at < 0 ? len : static_cast<std::size_t>(at)] += 1;
    }
    w[d].assign(len + 1, 1.0);
    for (std::size_t q = 0; q <= len; ++q)
      if (count[q] > 0) spread(w[d], d, q == len ? -1 : static_cast<int>(q), count[q]);
    normalise(w[d]);
  }
  return w;
}

/// Adds a point at its position and, on an ordered axis, half as much one step away and a quarter two
/// steps away (a categorical value says nothing of the values beside it by position).
COTUNE_DECL void parzen_model::spread(std::vector<double>& axis, std::size_t d, int at, double weight) const {
  if (at < 0) {
    axis.back() += weight;
    return;
  }
  if (space_->axes()[d].categorical()) {
    axis[static_cast<std::size_t>(at)] += weight;
    return;
  }
  const int len = static_cast<int>(axis.size()) - 1;
  for (int k = -2; k <= 2; ++k)
    if (at + k >= 0 && at + k < len) axis[static_cast<std::size_t>(at + k)] += weight / (1 << std::abs(k));
}

COTUNE_DECL void parzen_model::normalise(std::vector<double>& axis) {
  double s = 0;
  for (double x : axis) s += x;
  for (double& x : axis) x /= s;
}

} // namespace detail

class bayesian_search::session final : public search_session {
public:
  session(const search_space& sp, const search_settings& st, std::size_t depth, const bayesian_search& o)
      : search_session(sp, st, default_search_evaluations(sp.size()), depth),
        startup_(std::max<std::size_t>(o.startup_, 2)), gamma_(o.gamma_), explore_(o.explore_) {}

protected:
  std::vector<std::size_t> do_propose(std::size_t want) override {
    std::vector<std::size_t> out;
    auto fresh = [&](std::size_t i) { return !taken(i) && std::find(out.begin(), out.end(), i) == out.end(); };
    const bool any_valid = std::any_of(history().begin(), history().end(), [](const auto& h) { return h.valid(); });
    if (history().size() < startup_ || !any_valid) {
      while (out.size() < want)
        if (auto r = random_untaken(); r && fresh(*r)) out.push_back(*r);
        else break;
      return out;
    }
    detail::parzen_model model(space(), history(), gamma_);
    while (out.size() < want) {
      if (detail::unit(rng()) < explore_) {
        if (auto r = random_untaken(); r && fresh(*r)) {
          out.push_back(*r);
          continue;
        }
      }
      const auto pick = model.best(fresh);
      if (!pick) break;
      out.push_back(*pick);
      model.lie(*pick); // the next pick looks elsewhere
    }
    return out;
  }

private:
  std::size_t startup_;
  double gamma_, explore_;
};

COTUNE_DECL std::unique_ptr<search_session>
bayesian_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, *this);
}

} // namespace cotune
