#pragma once
/// \file The bodies of tune/engine.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include <boost/asio/thread_pool.hpp>

#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/engine.hpp>

namespace cotune {

struct engine::pools {
  explicit pools(std::size_t compile_threads) : compile(compile_threads), coordinator(1) {}
  boost::asio::thread_pool compile;
  boost::asio::thread_pool coordinator;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<boost::asio::thread_pool>> devices;
};

namespace detail {
inline std::size_t resolve_compile_threads(std::size_t requested) {
  if (requested) return requested;
  if (auto k = knobs().autotuning.compile_threads.get(); k > 0) return static_cast<std::size_t>(k);
  return std::max(1u, std::thread::hardware_concurrency());
}
} // namespace detail

COTUNE_DECL engine::engine(std::size_t compile_threads)
    : compile_threads_(detail::resolve_compile_threads(compile_threads)),
      pools_(std::make_unique<pools>(compile_threads_)) {}

COTUNE_DECL engine::~engine() {
  pools_->coordinator.join();
  pools_->compile.join();
  for (;;) {
    std::map<std::string, std::unique_ptr<boost::asio::thread_pool>> devices;
    {
      std::lock_guard lock(pools_->mutex);
      devices.swap(pools_->devices);
    }
    if (devices.empty()) break;
    for (auto& [id, pool] : devices) pool->join();
  }
}

COTUNE_DECL engine& engine::shared() {
  static engine e;
  return e;
}

COTUNE_DECL boost::asio::any_io_executor engine::compile_executor() { return pools_->compile.get_executor(); }

COTUNE_DECL boost::asio::any_io_executor engine::coordinator() { return pools_->coordinator.get_executor(); }

COTUNE_DECL boost::asio::any_io_executor engine::device_executor(const std::string& id) {
  std::lock_guard lock(pools_->mutex);
  auto& pool = pools_->devices[id];
  if (!pool) pool = std::make_unique<boost::asio::thread_pool>(1);
  return pool->get_executor();
}

COTUNE_DECL std::size_t engine::device_threads() {
  std::lock_guard lock(pools_->mutex);
  return pools_->devices.size();
}

} // namespace cotune
