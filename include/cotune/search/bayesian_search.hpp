#pragma once
/// \file `cotune::bayesian_search`: model-based search with a tree-structured Parzen estimator (TPE).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

namespace detail {

/// The TPE model of bayesian_search (and of bayes_local_search): a Parzen density per axis of the good
/// positions and one of the bad, and a candidate's score, the log-ratio good/bad summed over the axes.
class parzen_model {
public:
  /// From outcomes: good = the fastest `gamma` share of the valid ones (at least one), bad = the rest
  /// and every failure.
  COTUNE_DECL parzen_model(const search_space& space, const std::vector<search_outcome>& history, double gamma);

  /// Higher: more likely good than bad.
  [[nodiscard]] COTUNE_DECL double score(std::size_t i) const;
  /// Counts candidate `i` as bad (the "constant liar" that spreads a batch).
  COTUNE_DECL void lie(std::size_t i);
  /// The fresh candidate of highest score (ties: the lower index); nothing when none is fresh.
  template <class Fresh>
  [[nodiscard]] std::optional<std::size_t> best(Fresh fresh) const {
    std::optional<std::size_t> out;
    double best_s = -INFINITY;
    for (std::size_t i = 0; i < space_->size(); ++i) {
      if (!fresh(i)) continue;
      if (const double s = score(i); !out || s > best_s) {
        out = i;
        best_s = s;
      }
    }
    return out;
  }

private:
  /// Per axis, normalised weights per position (the last slot: the parameter is missing).
  using density = std::vector<std::vector<double>>;

  [[nodiscard]] density densities(const std::vector<std::size_t>& points) const;
  /// Adds `weight` points at position `at` of axis `d` (-1: the parameter is missing).
  void spread(std::vector<double>& axis, std::size_t d, int at, double weight = 1) const;
  static void normalise(std::vector<double>& axis);
  void update_ratio(std::size_t d);

  const search_space* space_;
  density good_, bad_;
  density log_ratio_; ///< per axis and position, log(good) - log(bad): what score() sums
  std::size_t bad_count_ = 0;
};

} // namespace detail

/// Bergstra et al.'s TPE over the finite candidate list. After `startup` random candidates, the
/// measured ones are split into good (the fastest `gamma` fraction) and bad (the rest, and every
/// failed candidate: a compile error or out of resources makes its parameter values less likely);
/// each axis gets a Parzen density of the good and of the bad positions (weight 1 on the position,
/// 1/2 one step away, 1/4 two steps on an ordered axis, only the position itself on a categorical
/// one, plus a prior of 1 per position), and the untried candidates with the highest ratio good/bad,
/// summed in logs over the axes, are proposed. A batch is diversified by counting each pick as bad
/// for the next ("constant liar"). With probability `explore` a pick is a random candidate instead,
/// so the model cannot lock itself in.
class bayesian_search final : public search_strategy {
public:
  explicit bayesian_search(std::size_t startup = 10, double gamma = 0.25, double explore = 0.1)
      : startup_(startup), gamma_(gamma), explore_(explore) {}

protected:
  class session;

  COTUNE_DECL std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                                       std::size_t depth) const override;
  std::string do_name() const override { return "bayes"; }

private:
  std::size_t startup_;
  double gamma_, explore_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/bayesian_search.ipp>
#endif
