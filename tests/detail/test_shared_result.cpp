// Tests for cotune/detail/shared_result.hpp: the single-flight outcome many coroutines await.

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <cotune/detail/shared_result.hpp>

using cotune::detail::shared_result;

namespace {

boost::asio::awaitable<std::string> await_value(std::shared_ptr<shared_result<std::string>> r) {
  auto waiting = r->wait();
  co_return co_await std::move(waiting);
}

} // namespace

TEST_CASE("waiters that arrive before and after the value all get it", "[detail][shared_result]") {
  boost::asio::thread_pool pool(4);
  auto r = std::make_shared<shared_result<std::string>>();
  std::vector<std::future<std::string>> early;
  for (int i = 0; i < 16; ++i) early.push_back(boost::asio::co_spawn(pool, await_value(r), boost::asio::use_future));
  CHECK_FALSE(r->ready());
  r->set_value("tuned");
  CHECK(r->ready());
  auto late = boost::asio::co_spawn(pool, await_value(r), boost::asio::use_future);
  for (auto& f : early) CHECK(f.get() == "tuned");
  CHECK(late.get() == "tuned");
  pool.join();
}

TEST_CASE("an exception reaches every waiter and only the first outcome counts", "[detail][shared_result]") {
  boost::asio::thread_pool pool(2);
  auto r = std::make_shared<shared_result<std::string>>();
  auto f1 = boost::asio::co_spawn(pool, await_value(r), boost::asio::use_future);
  r->set_exception(std::make_exception_ptr(std::runtime_error("every candidate failed")));
  r->set_value("too late");
  auto f2 = boost::asio::co_spawn(pool, await_value(r), boost::asio::use_future);
  CHECK_THROWS_WITH(f1.get(), "every candidate failed");
  CHECK_THROWS_WITH(f2.get(), "every candidate failed");
  pool.join();
}

TEST_CASE("the setter may drop its reference while waiters are still registering and resuming",
          "[detail][shared_result]") {
  // The shape of the autotuner's single flight: each waiter owns a reference (taken by value into its
  // coroutine), the setter drops its own right after setting. Under ASan this is where the g++ 12
  // double destruction of a co_await temporary showed up as a use-after-free.
  boost::asio::thread_pool pool(4);
  for (int round = 0; round < 200; ++round) {
    auto r = std::make_shared<shared_result<std::string>>();
    std::vector<std::future<std::string>> waiting;
    for (int i = 0; i < 8; ++i) waiting.push_back(boost::asio::co_spawn(pool, await_value(r), boost::asio::use_future));
    std::this_thread::yield(); // some waiters register before the outcome, others after
    const std::string what = "round " + std::to_string(round);
    r->set_exception(std::make_exception_ptr(std::runtime_error(what)));
    r.reset();
    for (auto& f : waiting) CHECK_THROWS_WITH(f.get(), what);
  }
  pool.join();
}

TEST_CASE("a waiter resumes on its own executor, not on the setter's thread", "[detail][shared_result]") {
  boost::asio::io_context io;
  auto r = std::make_shared<shared_result<int>>();
  std::thread::id resumed_on;
  int got = 0;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        auto w = r->wait();
        // Not inside CHECK(...): Catch repeats the expression in a dead branch, and g++ 12 then
        // suspends on the awaitable twice.
        got = co_await std::move(w);
        resumed_on = std::this_thread::get_id();
      },
      boost::asio::detached);
  io.poll(); // the waiter registers
  std::thread setter([&] { r->set_value(42); });
  setter.join();
  io.run();
  CHECK(got == 42);
  CHECK(resumed_on == std::this_thread::get_id());
}
