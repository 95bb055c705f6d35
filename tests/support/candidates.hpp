#pragma once
/// \file Test helpers: a space of configs and the outcomes a tuning starts from.
///
/// Header-only; include it with a relative path ("../support/candidates.hpp").

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune_test {

/// n configs {BLOCK: 0} ... {BLOCK: n-1}.
inline std::vector<cotune::config> space(std::size_t n) {
  std::vector<cotune::config> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(cotune::config{{"BLOCK", static_cast<std::int64_t>(i)}});
  return out;
}

/// Outcomes as a tuning makes them: each candidate `not run` until it completes.
inline std::vector<cotune::candidate_result> pending(const std::vector<cotune::config>& cfgs) {
  std::vector<cotune::candidate_result> out(cfgs.size());
  for (std::size_t i = 0; i < cfgs.size(); ++i) {
    out[i].cfg = cfgs[i];
    out[i].status = cotune::candidate_status::not_run;
  }
  return out;
}

} // namespace cotune_test
