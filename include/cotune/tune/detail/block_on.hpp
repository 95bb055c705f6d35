#pragma once
/// \file `detail::block_on`: start a coroutine on an executor and wait for its result on this thread.
/// The blocking calls (`autotuner::tune_now`, `warmup`, a first launch) are built on it. It stands in
/// for `co_spawn(..., use_future).get()`, whose `<future>` and `use_future.hpp` cost every file that
/// includes the umbrella 13 MB of g++'s memory (benchmarks/RESULTS.md, "Compile time: the umbrella
/// within budget").
///
/// Called from the executor's own thread it would wait for work that thread is to do, as a
/// future's `get()` would: the blocking calls are for threads outside the engine.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <cotune/core/errors.hpp>

namespace cotune::detail {

/// What the coroutine's completion hands to the waiting thread. Shared by both, so that the
/// completion, still running after it wakes the waiter, never touches a destroyed object.
template <class T>
struct blocking_slot {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;
  std::optional<T> value;

  void finish(std::exception_ptr e, std::optional<T> v) {
    std::lock_guard lock(mutex);
    if (e) error = std::move(e);
    else value = std::move(v);
    done = true;
    done_cv.notify_one();
  }
};

/// The coroutine's completion handler. If Asio destroys it uncalled (its executor stopped and was
/// destroyed with the coroutine pending), the waiter gets an error instead of waiting for ever, as a
/// future's `get()` threw `broken_promise`.
template <class T>
class blocking_completion {
public:
  explicit blocking_completion(std::shared_ptr<blocking_slot<T>> slot) noexcept : slot_(std::move(slot)) {}
  blocking_completion(blocking_completion&&) noexcept = default;
  blocking_completion& operator=(blocking_completion&&) = delete;
  ~blocking_completion() {
    if (slot_)
      slot_->finish(std::make_exception_ptr(error("the coroutine was abandoned before it completed: its executor "
                                                  "stopped and was destroyed")),
                    std::nullopt);
  }

  void operator()(std::exception_ptr e, T v) {
    std::shared_ptr<blocking_slot<T>> slot = std::move(slot_); // called: the destructor has nothing to do
    if (e) slot->finish(std::move(e), std::nullopt);
    else slot->finish(nullptr, std::move(v));
  }

private:
  std::shared_ptr<blocking_slot<T>> slot_;
};

/// Runs `op` on `executor` and returns its value, or rethrows its exception, once it completes.
template <class T, class Executor>
T block_on(const Executor& executor, boost::asio::awaitable<T> op) {
  auto slot = std::make_shared<blocking_slot<T>>();
  boost::asio::co_spawn(executor, std::move(op), blocking_completion<T>(slot));
  std::unique_lock lock(slot->mutex);
  slot->done_cv.wait(lock, [&] { return slot->done; });
  if (slot->error) std::rethrow_exception(slot->error);
  return std::move(*slot->value);
}

} // namespace cotune::detail
