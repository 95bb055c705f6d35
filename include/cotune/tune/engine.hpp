#pragma once
/// \file `cotune::engine`: the thread pools tunings run on.
///
/// - a compile pool (`autotuning.compile_threads`, default: hardware threads) runs Backend::compile;
/// - one dedicated thread per device runs load + benchmark, so timings never overlap on a device and
///   device contexts stay on one thread;
/// - a coordinator thread runs the tuning coroutines themselves (cheap bookkeeping only).

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cotune/knobs/knobs.hpp>

namespace cotune {

/// Owns the pools. `engine::shared()` is the process-wide one; tests and embedders may make their own.
class engine {
public:
  /// `compile_threads` 0: the `autotuning.compile_threads` knob, and if that is 0, the hardware threads.
  explicit engine(std::size_t compile_threads = 0)
      : compile_threads_(resolve(compile_threads)), compile_pool_(compile_threads_), coordinator_(1) {}
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  /// Finishes the work already given (the coordinator's, the compile pool's, every device's) and joins
  /// the threads. Device threads are joined without the lock held, so that work on one device may
  /// still ask for another device's thread (made and joined in a later round).
  ~engine() {
    coordinator_.join();
    compile_pool_.join();
    for (;;) {
      std::map<std::string, std::unique_ptr<boost::asio::thread_pool>> pools;
      {
        std::lock_guard lock(mutex_);
        pools.swap(devices_);
      }
      if (pools.empty()) break;
      for (auto& [id, pool] : pools) pool->join();
    }
  }

  /// The process-wide engine, made on first use.
  [[nodiscard]] static engine& shared() {
    static engine e;
    return e;
  }

  [[nodiscard]] std::size_t compile_threads() const noexcept { return compile_threads_; }
  [[nodiscard]] boost::asio::any_io_executor compile_executor() { return compile_pool_.get_executor(); }
  [[nodiscard]] boost::asio::any_io_executor coordinator() { return coordinator_.get_executor(); }

  /// The thread of device `id` (the backend's `device_key`, naming a physical device), made on first
  /// use. Every tuner that benchmarks on that device uses the same thread, whatever its type.
  [[nodiscard]] boost::asio::any_io_executor device_executor(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto& pool = devices_[id];
    if (!pool) pool = std::make_unique<boost::asio::thread_pool>(1);
    return pool->get_executor();
  }

  /// How many device threads exist (one per device key used so far).
  [[nodiscard]] std::size_t device_threads() {
    std::lock_guard lock(mutex_);
    return devices_.size();
  }

private:
  static std::size_t resolve(std::size_t requested) {
    if (requested) return requested;
    if (auto k = knobs().autotuning.compile_threads.get(); k > 0) return static_cast<std::size_t>(k);
    return std::max(1u, std::thread::hardware_concurrency());
  }

  std::size_t compile_threads_;
  boost::asio::thread_pool compile_pool_;
  boost::asio::thread_pool coordinator_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<boost::asio::thread_pool>> devices_;
};

} // namespace cotune
