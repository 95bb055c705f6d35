#pragma once
/// \file The bodies of search/exhaustive_search.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cstddef>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <cotune/search/exhaustive_search.hpp>

namespace cotune {

class exhaustive_search::session final : public search_session {
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

COTUNE_DECL std::unique_ptr<search_session>
exhaustive_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, sp.size(), depth);
}

class random_search::session final : public search_session {
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

COTUNE_DECL std::unique_ptr<search_session>
random_search::do_start(const search_space& sp, const search_settings& st, std::size_t depth) const {
  return std::make_unique<session>(sp, st, depth);
}

} // namespace cotune
