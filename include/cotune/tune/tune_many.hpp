#pragma once
/// \file `cotune::tune_many`: runs many tuning jobs at once, across every device.

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <cotune/tune/engine.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// One tuning task: typically `[&] { return tuner.tune(args...); }` for a tuner bound to one device.
using tuning_task = std::function<boost::asio::awaitable<const tuning_result*>()>;

/// What one job gave: its result, or the error that stopped it.
struct tuning_outcome {
  const tuning_result* result = nullptr;
  std::exception_ptr error{};
  [[nodiscard]] bool ok() const noexcept { return result != nullptr; }
};

/// Runs every job concurrently and waits for all of them. Compiles of all jobs share the compile pool;
/// benchmarks run on each job's device thread, so jobs bound to different devices measure in
/// parallel and jobs on one device take turns. A failing job does not stop the others.
///
///     std::vector<cotune::tuning_task> jobs;
///     for (auto& t : tuners_per_device) jobs.push_back([&] { return t->tune(args...); });
///     auto outcomes = cotune::tune_many(std::move(jobs));
inline std::vector<tuning_outcome> tune_many(std::vector<tuning_task> jobs, engine& eng = engine::shared()) {
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
