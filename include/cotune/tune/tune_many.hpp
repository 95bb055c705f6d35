#pragma once
/// \file `cotune::tune_many`: runs many tuning jobs at once, across every device.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <cotune/detail/config.hpp>
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
[[nodiscard]] COTUNE_DECL std::vector<tuning_outcome> tune_many(std::vector<tuning_task> jobs,
                                                           engine& eng = engine::shared());

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/tune_many.ipp>
#endif
