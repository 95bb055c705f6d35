#pragma once
/// \file The bodies of tune/detail/interleaved_finals.hpp (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <string>
#include <utility>
#include <vector>

#include <cotune/bench/stopping_rule.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/tune/detail/interleaved_finals.hpp>
#include <cotune/tune/verification.hpp>

namespace cotune {

COTUNE_DECL void detail::record_failure(candidate_result& r, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const candidate_crashed& x) {
    r.status = candidate_status::crashed;
    r.reason = x.what();
  } catch (const candidate_hung& x) {
    r.status = candidate_status::hung;
    r.reason = x.what();
  } catch (const compiler_crashed& x) {
    r.status = candidate_status::compiler_crashed;
    r.reason = x.what();
  } catch (const compile_error& x) {
    r.status = candidate_status::compile_error;
    r.reason = x.what();
  } catch (const out_of_resources& x) {
    r.status = candidate_status::out_of_resources;
    r.reason = x.what();
  } catch (const wrong_result& x) {
    r.status = candidate_status::wrong_result;
    r.reason = x.what();
  } catch (const timeout_error& x) {
    r.status = candidate_status::timeout;
    r.reason = x.what();
  } catch (const launch_error& x) {
    r.status = candidate_status::launch_error;
    r.reason = x.what();
  } catch (const std::exception& x) {
    r.status = candidate_status::error;
    r.reason = x.what();
  } catch (...) {
    r.status = candidate_status::error;
    r.reason = "unknown exception";
  }
  // A compiler's message may echo a source line in Latin-1: the result is written as JSON, which is UTF-8.
  r.reason = utf8_sanitized(r.reason);
  r.time = {inf_ms, inf_ms, inf_ms};
}

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
