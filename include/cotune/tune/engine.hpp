#pragma once
/// \file `cotune::engine`: the thread pools tunings run on.
///
/// - a compile pool (`autotuning.compile_threads`, default: hardware threads) runs Backend::compile;
/// - one dedicated thread per device runs load + benchmark, so timings never overlap on a device and
///   device contexts stay on one thread;
/// - a coordinator thread runs the tuning coroutines themselves (cheap bookkeeping only).
///
/// The pools live behind a pointer, their bodies in engine.ipp: with COTUNE_SEPARATE_COMPILATION a file
/// that includes cotune parses neither Asio's thread pool nor the conversion of its executor to
/// `any_io_executor` (about a second of template instantiation per file).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include <cotune/detail/config.hpp>

namespace cotune {

/// Owns the pools. `engine::shared()` is the process-wide one; tests and embedders may make their own.
class engine {
public:
  /// `compile_threads` 0: the `autotuning.compile_threads` knob, and if that is 0, the hardware threads.
  COTUNE_DECL explicit engine(std::size_t compile_threads = 0);
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  /// Finishes the work already given (the coordinator's, the compile pool's, every device's) and joins
  /// the threads. Device threads are joined without the lock held, so that work on one device may
  /// still ask for another device's thread (made and joined in a later round).
  COTUNE_DECL ~engine();

  /// The process-wide engine, made on first use.
  [[nodiscard]] COTUNE_DECL static engine& shared();

  [[nodiscard]] std::size_t compile_threads() const noexcept { return compile_threads_; }
  [[nodiscard]] COTUNE_DECL boost::asio::any_io_executor compile_executor();
  [[nodiscard]] COTUNE_DECL boost::asio::any_io_executor coordinator();

  /// The thread of device `id` (the backend's `device_key`, naming a physical device), made on first
  /// use. Every tuner that benchmarks on that device uses the same thread, whatever its type.
  [[nodiscard]] COTUNE_DECL boost::asio::any_io_executor device_executor(const std::string& id);

  /// How many device threads exist (one per device key used so far).
  [[nodiscard]] COTUNE_DECL std::size_t device_threads();

private:
  struct pools;
  std::size_t compile_threads_;
  std::unique_ptr<pools> pools_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/engine.ipp>
#endif
