#pragma once
/// \file `detail::run_on`: run a blocking callable on another executor and resume the awaiting
/// coroutine on its own executor with the callable's result or exception. The one "run elsewhere,
/// resume here" primitive of the library (the autotuner's compile/load steps, Redis I/O).
///
/// GCC 12 destroys some temporaries of a `co_await` operand twice (a closure or a by-value argument
/// with a non-trivial destructor: a `shared_ptr` copy, a `std::string`, an executor). Every awaiting
/// site in cotune therefore builds its awaitable in a named variable first and awaits that:
///
///     auto op = detail::run_on(pool, std::move(task));
///     auto value = co_await std::move(op);
///
/// and so does this header internally (the initiation is named, the awaitable is named).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cotune::detail {

/// Runs `task()` on `executor`; the awaiting coroutine resumes on its own executor (never inline on
/// the executor's thread) with the result, or with the exception `task` threw.
template <class Executor, class F>
[[nodiscard]] boost::asio::awaitable<std::invoke_result_t<F&>> run_on(Executor executor, F task) {
  using result_type = std::invoke_result_t<F&>;
  // A slot that is default-constructible whatever the result type is (the handler's second argument).
  using slot = std::conditional_t<std::is_void_v<result_type>, bool, std::optional<result_type>>;
  auto initiation = [executor = std::move(executor), task = std::move(task)](auto handler) mutable {
    // Keeps the caller's executor alive (an io_context with no other work would otherwise return).
    auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                      boost::asio::execution::outstanding_work.tracked);
    boost::asio::post(executor, [task = std::move(task), handler = std::move(handler),
                                 caller = std::move(caller)]() mutable {
      std::exception_ptr error;
      slot result{};
      try {
        if constexpr (std::is_void_v<result_type>) task();
        else result.emplace(task());
      } catch (...) {
        error = std::current_exception();
      }
      boost::asio::post(caller, [handler = std::move(handler), error, result = std::move(result)]() mutable {
        std::move(handler)(error, std::move(result));
      });
    });
  };
  auto op = boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(std::exception_ptr, slot)>(
      std::move(initiation), boost::asio::use_awaitable);
  auto out = co_await std::move(op);
  if constexpr (std::is_void_v<result_type>) (void)out;
  else co_return std::move(*out);
}

} // namespace cotune::detail
