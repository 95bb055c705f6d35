#pragma once
/// \file The bodies of tune/detail/interleaved_finals.hpp (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <string>
#include <utility>
#include <vector>

#include <cotune/bench/stopping_rule.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/detail/tuning_core.hpp>

namespace cotune {

COTUNE_DECL final_failure detail::failure_of(std::exception_ptr e) {
  candidate_result scratch;
  record_failure(scratch, std::move(e));
  return {scratch.status, std::move(scratch.reason)};
}

COTUNE_DECL std::vector<final_outcome> summarize_finals(const finals_progress& progress) {
  std::vector<final_outcome> out(progress.samples.size());
  const bench_options summary{.quantiles = {0.5, 0.2, 0.8}};
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (k < progress.failures.size() && progress.failures[k]) {
      out[k].failure = progress.failures[k];
      continue;
    }
    const auto& samples = progress.samples[k];
    if (samples.empty()) {
      out[k].failure = final_failure{candidate_status::error, "the benchmarker returned no samples in the finals"};
      continue;
    }
    noise_tracker noise;
    for (double x : samples) noise.add(x);
    out[k].rsd = noise.rsd();
    out[k].samples = samples.size();
    const auto q = summarize(samples, summary); // a copy: a resumed or retried finals reads them again
    out[k].time = timings{q[0], q[1], q[2]};
  }
  return out;
}

} // namespace cotune
