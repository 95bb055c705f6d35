#pragma once
/// \file `detail::shared_result<T>`: a value (or an exception) set once and awaited by any number of
/// coroutines. The autotuner's single flight: the first caller of a key tunes, the others await the
/// flight's shared_result.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cotune::detail {

/// Set once with `set_value` or `set_exception`; `co_await wait()` gives the value or rethrows the
/// exception. A waiter receives its outcome through its completion handler, by value: after it
/// resumes it reads nothing from this object, so the last owner may destroy it at any time after
/// setting it. Waiters resume on their own executors, never inline on the setter's thread.
///
/// With an `exception_copier`, the exception is copied when set and again for each waiter, so no two
/// threads ever throw one object (see cotune::copy_error for why that matters).
template <class T>
class shared_result {
public:
  using exception_copier = std::exception_ptr (*)(const std::exception_ptr&);

  shared_result() = default;
  explicit shared_result(exception_copier copy) : copy_(copy) {}
  shared_result(const shared_result&) = delete;
  shared_result& operator=(const shared_result&) = delete;

  /// Sets the value and resumes every waiter. Only the first of set_value/set_exception counts.
  void set_value(T value) { complete(nullptr, std::move(value)); }
  /// Sets the exception every waiter will see. Only the first of set_value/set_exception counts.
  void set_exception(std::exception_ptr error) { complete(std::move(error), std::nullopt); }

  [[nodiscard]] bool ready() const {
    std::lock_guard lock(mutex_);
    return done_;
  }

  /// The value once set (at once if it is already), or the exception rethrown.
  [[nodiscard]] boost::asio::awaitable<T> wait() {
    auto initiation = [this](auto handler) {
      auto ex = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                    boost::asio::execution::outstanding_work.tracked);
      auto resume = [ex, h = std::make_shared<decltype(handler)>(std::move(handler))](std::exception_ptr e,
                                                                                        std::optional<T> v) {
        boost::asio::post(ex, [h, e, v = std::move(v)]() mutable { std::move(*h)(e, std::move(v)); });
      };
      std::unique_lock lock(mutex_);
      if (!done_) {
        waiters_.emplace_back(std::move(resume));
        return;
      }
      auto e = copied(error_);
      auto v = value_;
      lock.unlock();
      resume(std::move(e), std::move(v));
    };
    auto op = boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(std::exception_ptr, std::optional<T>)>(
        std::move(initiation), boost::asio::use_awaitable);
    std::optional<T> out = co_await std::move(op);
    co_return std::move(*out);
  }

private:
  void complete(std::exception_ptr error, std::optional<T> value) {
    std::vector<std::function<void(std::exception_ptr, std::optional<T>)>> waiters;
    {
      std::lock_guard lock(mutex_);
      if (done_) return;
      done_ = true;
      error_ = copied(error);
      value_ = value;
      waiters.swap(waiters_);
    }
    for (auto& w : waiters) w(copied(error_), value);
  }

  [[nodiscard]] std::exception_ptr copied(const std::exception_ptr& e) const { return copy_ && e ? copy_(e) : e; }

  exception_copier copy_ = nullptr;
  mutable std::mutex mutex_;
  bool done_ = false;
  std::exception_ptr error_;
  std::optional<T> value_;
  std::vector<std::function<void(std::exception_ptr, std::optional<T>)>> waiters_;
};

} // namespace cotune::detail
