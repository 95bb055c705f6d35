#pragma once
/// \file The bodies of search/search_strategy.hpp's `search_session` (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

COTUNE_DECL std::size_t search_settings::evaluations_of(std::size_t candidates, std::size_t fallback) const {
  if (evaluations) return std::min(candidates, evaluations);
  if (fraction == 0) return std::min(candidates, fallback);
  if (!(fraction > 0 && fraction <= 1))
    throw error(
        fmt::format(COTUNE_FMT("search_settings: fraction {} is not in (0, 1]; give a share of the candidates such as "
                               "0.25 (a quarter), or 0 for none"),
                    fraction));
  return std::min(candidates, static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(candidates))));
}

COTUNE_DECL search_session::search_session(const search_space& space, search_settings settings,
                                           std::size_t default_evaluations, std::size_t depth)
    : space_(space), rng_(settings.seed), depth_(std::max<std::size_t>(1, depth)),
      taken_(space.size(), false), outcome_(space.size()), start_(std::chrono::steady_clock::now()),
      wall_ms_(settings.wall_ms) {
  limit_ = settings.evaluations_of(space.size(), default_evaluations);
}

COTUNE_DECL void search_session::known(const search_outcome& o) {
  if (o.index >= space_.size() || taken_[o.index]) return;
  taken_[o.index] = true;
  ++spent_;
  prior_.push_back(o);
}

COTUNE_DECL void search_session::seed(const std::vector<std::size_t>& indices) {
  for (std::size_t i : indices)
    if (i < space_.size() && !taken_[i] && std::find(seeds_.begin(), seeds_.end(), i) == seeds_.end())
      seeds_.push_back(i);
}

COTUNE_DECL std::vector<std::size_t> search_session::propose(std::size_t want) {
  deliver();
  want = std::min(want, limit_ > spent_ ? limit_ - spent_ : 0);
  if (want == 0 || out_of_time()) return {};
  std::vector<std::size_t> out;
  auto take = [&](std::size_t i) {
    if (out.size() == want || i >= space_.size() || taken_[i]) return;
    taken_[i] = true;
    out.push_back(i);
  };
  std::size_t used = 0;
  for (; used < seeds_.size() && out.size() < want; ++used) take(seeds_[used]);
  seeds_.erase(seeds_.begin(), seeds_.begin() + static_cast<std::ptrdiff_t>(used));
  if (out.size() < want)
    for (std::size_t i : do_propose(want - out.size())) take(i);
  spent_ += out.size();
  if (!out.empty()) batches_.push_back({out, 0});
  return out;
}

COTUNE_DECL void search_session::tell(const search_outcome& o) {
  if (o.index >= space_.size() || outcome_[o.index]) return;
  outcome_[o.index] = o;
  for (auto& b : batches_)
    if (std::find(b.indices.begin(), b.indices.end(), o.index) != b.indices.end()) ++b.told;
}

COTUNE_DECL std::optional<std::size_t> search_session::random_untaken() {
  const std::size_t left = space_.size() - static_cast<std::size_t>(std::count(taken_.begin(), taken_.end(), true));
  if (left == 0) return std::nullopt;
  std::size_t k = detail::below(rng_, left);
  for (std::size_t i = 0; i < taken_.size(); ++i)
    if (!taken_[i] && k-- == 0) return i;
  return std::nullopt;
}

COTUNE_DECL void search_session::deliver() {
  for (auto& o : prior_) accept(o);
  prior_.clear();
  // Every batch complete: the caller waits on the strategy, so it sees them all (else it could stall).
  const bool all_told = std::all_of(batches_.begin(), batches_.end(), [](const batch& b) { return b.told == b.indices.size(); });
  while (delivered_ < batches_.size() && (all_told || delivered_ + depth_ <= batches_.size())) {
    const batch& b = batches_[delivered_];
    if (b.told < b.indices.size()) break;
    for (std::size_t i : b.indices) accept(*outcome_[i]);
    ++delivered_;
  }
}

COTUNE_DECL void search_session::accept(const search_outcome& o) {
  history_.push_back(o);
  if (o.valid() && (!best_ || o.time_ms < best_ms_)) {
    best_ = o.index;
    best_ms_ = o.time_ms;
  }
  do_tell(o);
}

COTUNE_DECL bool search_session::out_of_time() const {
  if (wall_ms_ <= 0) return false;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count() >= wall_ms_;
}

} // namespace cotune
