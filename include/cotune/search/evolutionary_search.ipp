#pragma once
/// \file The bodies of search/evolutionary_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cotune/search/evolutionary_search.hpp>

namespace cotune {

class evolutionary_search::session final : public search_session {
public:
  session(const search_space& sp, const search_settings& st, std::size_t depth, std::size_t population)
      : search_session(sp, st, default_search_evaluations(sp.size()), depth), population_(population) {}

protected:
  std::vector<std::size_t> do_propose(std::size_t want) override {
    std::vector<std::size_t> out;
    auto fresh = [&](std::size_t i) { return !taken(i) && std::find(out.begin(), out.end(), i) == out.end(); };
    std::vector<search_outcome> parents;
    for (const auto& h : history())
      if (h.valid()) parents.push_back(h);
    std::stable_sort(parents.begin(), parents.end(), [](auto& a, auto& b) { return a.time_ms < b.time_ms; });
    if (parents.size() > population_) parents.resize(population_);
    const bool first_generation = history().size() + in_flight() < population_ || parents.size() < 2;
    while (out.size() < want) {
      if (first_generation) {
        if (history().size() + in_flight() + out.size() >= population_ && parents.size() >= 2) break;
        auto r = random_untaken();
        if (!r || !fresh(*r)) break;
        out.push_back(*r);
        continue;
      }
      const auto& a = space().coords(pick(parents));
      const auto& b = space().coords(pick(parents));
      std::vector<int> child(a.size());
      const std::size_t dims = child.size();
      for (std::size_t d = 0; d < dims; ++d) {
        child[d] = (rng()() & 1) ? a[d] : b[d];
        if (detail::below(rng(), dims) == 0) mutate(child, d);
      }
      auto j = space().nearest(child, fresh);
      if (!j) break;
      out.push_back(*j);
    }
    return out;
  }

private:
  /// The faster of two parents drawn at random (binary tournament).
  std::size_t pick(const std::vector<search_outcome>& ps) {
    const auto& x = ps[detail::below(rng(), ps.size())];
    const auto& y = ps[detail::below(rng(), ps.size())];
    return x.time_ms <= y.time_ms ? x.index : y.index;
  }
  void mutate(std::vector<int>& p, std::size_t d) {
    const int len = static_cast<int>(space().axes()[d].values.size());
    if (len < 2) return;
    if (space().axes()[d].categorical()) {
      // No distance to step by: the value of a random candidate (values weigh as the list holds them).
      const int v = space().coords(detail::below(rng(), space().size()))[d];
      if (v >= 0) p[d] = v;
      return;
    }
    if (rng()() & 1) p[d] = static_cast<int>(detail::below(rng(), static_cast<std::size_t>(len)));
    else p[d] = std::clamp(p[d] + ((rng()() & 1) ? 1 : -1), 0, len - 1);
  }

  std::size_t population_;
};

COTUNE_DECL std::unique_ptr<search_session>
evolutionary_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth, population_);
}

} // namespace cotune
