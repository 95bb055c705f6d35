#pragma once
/// \file The bodies of tune/measure_strategy.hpp's strategies (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <algorithm>
#include <cstddef>
#include <vector>

#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/measure_strategy.hpp>

namespace cotune {

COTUNE_DECL std::vector<std::size_t> measure_strategy::finalists(const std::vector<candidate_result>& first_pass,
                                                                 const bench_options& full) const {
  auto out = do_finalists(first_pass, full);
  std::erase_if(out, [&](std::size_t i) { return i >= first_pass.size() || first_pass[i].status != candidate_status::ok; });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

COTUNE_DECL screening_measure screening_measure::from_knobs() {
  return {knobs().bench.screen_rep_ms.get(), knobs().bench.screen_margin.get(),
          static_cast<std::size_t>(knobs().bench.screen_keep.get())};
}

COTUNE_DECL bench_options screening_measure::do_first_pass(const bench_options& full, std::size_t candidates) const {
  if (!applies(full, candidates)) return full;
  bench_options short_pass = full;
  short_pass.rep_ms = rep_ms_;
  short_pass.warmup_ms = std::min(full.warmup_ms, rep_ms_ / 4);
  short_pass.required_samples = std::max(samples_, full.required_samples.value_or(1));
  return short_pass;
}

COTUNE_DECL std::vector<std::size_t> screening_measure::do_finalists(const std::vector<candidate_result>& rs,
                                                                     const bench_options& full) const {
  if (!applies(full, rs.size())) return {}; // the first pass was a full one
  auto best = select_best(rs);
  std::vector<std::size_t> out;
  if (!best) return out;
  const double limit = rs[*best].time[0] * (1.0 + margin_);
  for (std::size_t i = 0; i < rs.size(); ++i)
    if (rs[i].status == candidate_status::ok && rs[i].time[0] <= limit) out.push_back(i);
  if (out.size() > keep_) {
    std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return rs[a].time < rs[b].time; });
    out.resize(keep_);
  }
  return out;
}

} // namespace cotune
