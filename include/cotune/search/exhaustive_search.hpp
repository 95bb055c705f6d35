#pragma once
/// \file `cotune::exhaustive_search` (the default) and `cotune::random_search`.

#include <cstddef>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <cotune/search/search_strategy.hpp>

namespace cotune {

/// Every candidate in config order (with a budget: the first ones). Without a budget the tuning is
/// exactly the one before search strategies existed: all candidates compiled at once.
class exhaustive_search final : public search_strategy {
protected:
  class session final : public search_session {
  public:
    using search_session::search_session;

  protected:
    std::vector<std::size_t> do_propose(std::size_t want) override {
      std::vector<std::size_t> out;
      for (; next_ < space().size() && out.size() < want; ++next_)
        if (!taken(next_)) out.push_back(next_);
      return out;
    }

  private:
    std::size_t next_ = 0;
  };

  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                           std::size_t depth) const override {
    return std::make_unique<session>(sp, st, sp.size(), depth);
  }
  std::string do_name() const override { return "exhaustive"; }
  bool do_evaluates_all() const override { return true; }
};

/// Candidates drawn uniformly without replacement: the baseline every other strategy must beat.
class random_search final : public search_strategy {
protected:
  class session final : public search_session {
  public:
    session(const search_space& sp, const search_settings& st, std::size_t depth)
        : search_session(sp, st, default_search_evaluations(sp.size()), depth), order_(sp.size()) {
      std::iota(order_.begin(), order_.end(), std::size_t{0});
      for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[detail::below(rng(), i)]);
    }

  protected:
    std::vector<std::size_t> do_propose(std::size_t want) override {
      std::vector<std::size_t> out;
      for (; next_ < order_.size() && out.size() < want; ++next_)
        if (!taken(order_[next_])) out.push_back(order_[next_]);
      return out;
    }

  private:
    std::vector<std::size_t> order_;
    std::size_t next_ = 0;
  };

  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                           std::size_t depth) const override {
    return std::make_unique<session>(sp, st, depth);
  }
  std::string do_name() const override { return "random"; }
};

} // namespace cotune
