#pragma once
/// \file The body of tune/tune_many.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp). Out of line because its co_spawn makes every including file emit Asio's
/// coroutine machinery for `const tuning_result*`, even a file that never calls it.

#include <future>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <cotune/tune/tune_many.hpp>

namespace cotune {

COTUNE_DECL std::vector<tuning_outcome> tune_many(std::vector<tuning_task> jobs, engine& eng) {
  std::vector<std::future<const tuning_result*>> futures;
  futures.reserve(jobs.size());
  for (auto& job : jobs) futures.push_back(boost::asio::co_spawn(eng.coordinator(), job(), boost::asio::use_future));
  std::vector<tuning_outcome> outcomes(futures.size());
  for (std::size_t i = 0; i < futures.size(); ++i) {
    try {
      outcomes[i].result = futures[i].get();
    } catch (...) {
      outcomes[i].error = std::current_exception();
    }
  }
  return outcomes;
}

} // namespace cotune
