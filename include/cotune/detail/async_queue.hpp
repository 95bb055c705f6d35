#pragma once
/// \file A multi-producer, single-consumer queue whose consumer is a coroutine.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cotune::detail {

/// Any thread may `push`; one coroutine at a time `co_await pop()`s. A pop that finds the queue
/// empty suspends until the next push, which resumes it on the coroutine's own executor.
/// (Used instead of asio's experimental concurrent_channel, whose try_send from several threads
/// lost messages in Boost 1.81 here.)
template <class T>
class async_queue {
public:
  void push(T item) {
    std::unique_lock lock(mutex_);
    if (waiter_) {
      auto resume = std::move(*waiter_);
      waiter_.reset();
      lock.unlock();
      resume(std::move(item));
      return;
    }
    items_.push_back(std::move(item));
  }

  /// The next item, waiting for it if none is queued.
  boost::asio::awaitable<T> pop() {
    // Named before awaiting: see run_on.hpp for the GCC 12 reason.
    auto initiation = [this](auto handler) {
      auto ex = boost::asio::get_associated_executor(handler);
      auto h = std::make_shared<decltype(handler)>(std::move(handler));
      std::function<void(T)> resume = [ex, h](T item) {
        boost::asio::post(ex, [h, item = std::move(item)]() mutable { std::move(*h)(std::move(item)); });
      };
      std::unique_lock lock(mutex_);
      if (!items_.empty()) {
        T item = std::move(items_.front());
        items_.pop_front();
        lock.unlock();
        resume(std::move(item));
      } else {
        waiter_ = std::move(resume);
      }
    };
    auto op = boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(T)>(std::move(initiation),
                                                                                          boost::asio::use_awaitable);
    co_return co_await std::move(op);
  }

private:
  std::mutex mutex_;
  std::deque<T> items_;
  std::optional<std::function<void(T)>> waiter_;
};

} // namespace cotune::detail
