#pragma once
/// \file `cotune::local_search`: greedy iterated local search over neighbouring parameter values.

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Starts from a few random candidates, then measures the neighbours (one step on one axis, see
/// `search_space::neighbours`) of the best point of the current walk and moves to any that is
/// faster. At a local optimum (every neighbour measured, none faster) it kicks: from the best
/// candidate found so far it changes `kick` random axes to random values and walks again from the
/// candidate nearest that point. Failed candidates are never moved to.
class local_search final : public search_strategy {
public:
  /// `starts`: random candidates measured before the first walk; `kick`: axes changed by a restart.
  explicit local_search(std::size_t starts = 4, std::size_t kick = 2) : starts_(starts), kick_(kick) {}

protected:
  class session final : public search_session {
  public:
    session(const search_space& sp, const search_settings& st, std::size_t depth, std::size_t starts, std::size_t kick)
        : search_session(sp, st, default_search_evaluations(sp.size()), depth), starts_(starts), kick_(kick) {}

  protected:
    std::vector<std::size_t> do_propose(std::size_t want) override {
      std::vector<std::size_t> out;
      auto draw = [&] {
        while (out.size() < want)
          if (auto r = random_untaken(); r && !contains(out, *r)) out.push_back(*r);
          else break;
      };
      if (history().size() + in_flight() < starts_) {
        draw();
        return out;
      }
      if (!center_) {
        if (in_flight() > 0) return out; // the starts are still running
        if (!best()) {                   // every start failed: more starts
          draw();
          return out;
        }
        move(*best(), best_time());
      }
      for (std::size_t j : space().neighbours(*center_))
        if (!taken(j) && out.size() < want && !contains(out, j)) out.push_back(j);
      if (!out.empty() || in_flight() > 0) return out;
      // A local optimum: kick from the best found so far.
      std::vector<int> p = space().coords(best().value_or(*center_));
      for (std::size_t k = 0; k < kick_ && space().dimensions() > 0; ++k) {
        const std::size_t d = detail::below(rng(), space().dimensions());
        p[d] = static_cast<int>(detail::below(rng(), space().axes()[d].values.size()));
      }
      if (auto j = space().nearest(p, [&](std::size_t i) { return !taken(i); })) {
        out.push_back(*j);
        center_ = *j;
        center_ms_ = std::numeric_limits<double>::infinity();
        kicked_ = true;
      }
      return out;
    }

    void do_tell(const search_outcome& o) override {
      if (kicked_ && center_ && o.index == *center_) {
        kicked_ = false;
        center_ms_ = o.valid() ? o.time_ms : std::numeric_limits<double>::infinity();
        return;
      }
      if (center_ && o.valid() && o.time_ms < center_ms_) move(o.index, o.time_ms);
    }

  private:
    static bool contains(const std::vector<std::size_t>& v, std::size_t i) {
      for (auto x : v)
        if (x == i) return true;
      return false;
    }
    [[nodiscard]] double best_time() const {
      for (const auto& h : history())
        if (h.index == *best()) return h.time_ms;
      return std::numeric_limits<double>::infinity();
    }
    void move(std::size_t i, double ms) {
      center_ = i;
      center_ms_ = ms;
    }

    std::size_t starts_, kick_;
    std::optional<std::size_t> center_;
    double center_ms_ = std::numeric_limits<double>::infinity();
    bool kicked_ = false;
  };

  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                           std::size_t depth) const override {
    return std::make_unique<session>(sp, st, depth, starts_, kick_);
  }
  std::string do_name() const override { return "local"; }

private:
  std::size_t starts_, kick_;
};

} // namespace cotune
