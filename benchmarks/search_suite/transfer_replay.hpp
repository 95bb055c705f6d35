#pragma once
// Transfer between tuned keys, replayed on the search suite's multi-size spaces (issue 37, item 3): one
// kernel's space measured whole at several problem sizes (data files with a "multi_size" object). Each
// size in turn is the new key and the others are tuned: their winners (each size's optimum, what an
// exhaustive tuning of it finds) seed the new key's search as a tuner seeds it (autotuner's
// transfer_seeds: the winners of the up to 4 nearest tuned keys by cotune::key_distance, nearest first,
// through search_session::seed: proposed first, counted against the budget, learnt from). Measured:
// evaluations until a config within 2% of the new key's optimum has been evaluated, with and without
// the seeds, for cotune's real strategies. Shared by bench_search_suite (--transfer) and
// tests/search/test_search_suite_data.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cotune/search/search_strategy.hpp>
#include <cotune/tune/key_distance.hpp>

#include "suite_data.hpp"

namespace cotune_bench {

/// The multi-size spaces by group, each group's sizes by their keys' numbers (smallest first); groups
/// of one size are left out.
inline std::map<std::string, std::vector<const suite_space*>> size_groups(const std::vector<suite_space>& spaces) {
  std::map<std::string, std::vector<const suite_space*>> out;
  for (const auto& s : spaces)
    if (!s.size_group.empty()) out[s.size_group].push_back(&s);
  std::erase_if(out, [](const auto& g) { return g.second.size() < 2; });
  for (auto& [group, sizes] : out)
    std::stable_sort(sizes.begin(), sizes.end(), [](const suite_space* a, const suite_space* b) {
      return cotune::key_shape::of(a->size_key).values < cotune::key_shape::of(b->size_key).values;
    });
  return out;
}

/// The index of the space's best valid config (ties: the first).
inline std::size_t best_index(const suite_space& s) {
  return static_cast<std::size_t>(std::min_element(s.truth.begin(), s.truth.end()) - s.truth.begin());
}

/// The seeds of `target`'s search from the `tuned` sizes: their winners, nearest key first (ties: in
/// the order given), at most `k` distinct ones, as indices of `target`'s configs (a winner the target's
/// space lacks is skipped, as a tuner skips a neighbour's winner that is not among the key's candidates).
inline std::vector<std::size_t> transfer_seeds(const suite_space& target, const std::vector<const suite_space*>& tuned,
                                               std::size_t k = 4) {
  std::vector<std::pair<double, const suite_space*>> near;
  for (const auto* t : tuned)
    if (t != &target)
      if (auto d = cotune::key_distance(target.size_key, t->size_key); d && *d > 0) near.emplace_back(*d, t);
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::size_t> seeds;
  for (const auto& [d, t] : near) {
    if (seeds.size() == k) break;
    const auto& winner = t->configs[best_index(*t)];
    const auto at = std::find(target.configs.begin(), target.configs.end(), winner);
    if (at == target.configs.end()) continue;
    const auto i = static_cast<std::size_t>(at - target.configs.begin());
    if (std::find(seeds.begin(), seeds.end(), i) == seeds.end()) seeds.push_back(i);
  }
  return seeds;
}

/// Evaluations of one search of `s` (strategy `st`, its session seeded with `seeds`, batches of `batch`
/// with `depth` in flight, as a tuning runs them) until a config within `near` of the optimum has been
/// evaluated; nothing when the budget runs out first. The times told are the stored ones.
inline std::optional<std::size_t> evaluations_to_near(const suite_space& s, const cotune::search_space& geometry,
                                                      const cotune::search_strategy& st,
                                                      const cotune::search_settings& settings,
                                                      const std::vector<std::size_t>& seeds, std::size_t batch,
                                                      std::size_t depth, double near = 0.02) {
  const double bound = s.optimum() * (1 + near) * (1 + 1e-12);
  auto session = st.start(geometry, settings, depth);
  session->seed(seeds);
  std::vector<std::vector<std::size_t>> flight;
  std::size_t evaluated = 0;
  for (;;) {
    while (flight.size() < depth) {
      auto b = session->propose(batch);
      if (b.empty()) break;
      flight.push_back(std::move(b));
    }
    if (flight.empty()) return std::nullopt;
    for (std::size_t i : flight.front()) {
      ++evaluated;
      const double t = s.truth[i];
      if (t <= bound) return evaluated;
      session->tell(std::isfinite(t) ? cotune::search_outcome{i, t, true}
                                     : cotune::search_outcome{i, std::numeric_limits<double>::infinity(), false});
    }
    flight.erase(flight.begin());
  }
}

/// Evaluations until within `near` of the optimum for an exhaustive tuning, which measures the seeds
/// first and then every config in the data file's order.
inline std::size_t exhaustive_evaluations_to_near(const suite_space& s, const std::vector<std::size_t>& seeds,
                                                  double near = 0.02) {
  const double bound = s.optimum() * (1 + near) * (1 + 1e-12);
  std::vector<std::size_t> order = seeds;
  for (std::size_t i = 0; i < s.truth.size(); ++i)
    if (std::find(seeds.begin(), seeds.end(), i) == seeds.end()) order.push_back(i);
  for (std::size_t k = 0; k < order.size(); ++k)
    if (s.truth[order[k]] <= bound) return k + 1;
  return order.size();
}

} // namespace cotune_bench
