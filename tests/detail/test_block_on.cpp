// Tests for cotune/tune/detail/block_on.hpp: start a coroutine on an executor and wait for it on this thread.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cotune/core/errors.hpp>
#include <cotune/tune/detail/block_on.hpp>

using cotune::detail::block_on;

namespace {

/// An io_context run by one thread of its own until destroyed (the engine's coordinator, in small).
class running_context {
public:
  running_context() : work_(ctx_.get_executor()), thread_([this] { ctx_.run(); }) {}
  running_context(const running_context&) = delete;
  running_context& operator=(const running_context&) = delete;
  ~running_context() {
    work_.reset();
    thread_.join();
  }
  [[nodiscard]] boost::asio::io_context::executor_type executor() { return ctx_.get_executor(); }
  [[nodiscard]] std::thread::id thread_id() const { return thread_.get_id(); }

private:
  boost::asio::io_context ctx_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

boost::asio::awaitable<std::string> greet(std::string name, std::thread::id* ran_on) {
  *ran_on = std::this_thread::get_id();
  // A suspension, so that the value arrives from a later turn of the executor, not inline.
  auto hop = boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
  co_await std::move(hop);
  co_return "tuned " + name;
}

boost::asio::awaitable<int> fail(std::string why) {
  throw std::runtime_error(why);
  co_return 0;
}

boost::asio::awaitable<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }

/// Suspends at a timer that fires a day later: the executor abandons it first.
boost::asio::awaitable<int> wait_a_day(std::atomic<bool>* started) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, std::chrono::hours(24));
  auto waiting = timer.async_wait(boost::asio::use_awaitable);
  started->store(true);
  co_await std::move(waiting);
  co_return 1;
}

} // namespace

TEST_CASE("block_on returns the coroutine's value, computed on the executor's thread", "[detail][block_on]") {
  running_context coordinator;
  std::thread::id ran_on;
  const std::string got = block_on(coordinator.executor(), greet("saxpy", &ran_on));
  CHECK(got == "tuned saxpy");
  CHECK(ran_on == coordinator.thread_id());
  CHECK(ran_on != std::this_thread::get_id());
}

TEST_CASE("block_on rethrows the coroutine's exception", "[detail][block_on]") {
  running_context coordinator;
  CHECK_THROWS_WITH(block_on(coordinator.executor(), fail("every candidate failed")), "every candidate failed");
  // The executor is still usable afterwards.
  std::thread::id ran_on;
  CHECK(block_on(coordinator.executor(), greet("again", &ran_on)) == "tuned again");
}

TEST_CASE("block_on moves a move-only result out", "[detail][block_on]") {
  running_context coordinator;
  const std::unique_ptr<int> v = block_on(coordinator.executor(), boxed(42));
  REQUIRE(v);
  CHECK(*v == 42);
}

TEST_CASE("many threads block on one executor at once, each gets its own result", "[detail][block_on]") {
  running_context coordinator;
  constexpr int threads = 16, rounds = 50;
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < threads; ++t)
    callers.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        std::thread::id ran_on;
        const std::string name = std::to_string(t) + "/" + std::to_string(r);
        if (block_on(coordinator.executor(), greet(name, &ran_on)) != "tuned " + name) ++wrong;
        try {
          (void)block_on(coordinator.executor(), fail(name));
          ++wrong;
        } catch (const std::runtime_error& e) {
          if (e.what() != name) ++wrong;
        }
        ++done;
      }
    });
  for (auto& c : callers) c.join();
  CHECK(done.load() == threads * rounds);
  CHECK(wrong.load() == 0);
}

TEST_CASE("a coroutine its executor abandons is an error for the waiter, not a wait for ever", "[detail][block_on]") {
  auto ctx = std::make_unique<boost::asio::io_context>();
  auto work = boost::asio::make_work_guard(*ctx);
  std::thread runner([&] { ctx->run(); });
  std::atomic<bool> started{false};
  std::exception_ptr got;
  std::thread waiter([&] {
    try {
      (void)block_on(ctx->get_executor(), wait_a_day(&started));
    } catch (...) {
      got = std::current_exception();
    }
  });
  while (!started.load()) std::this_thread::yield();
  ctx->stop();
  runner.join();
  work.reset();
  ctx.reset(); // destroys the suspended coroutine, and with it the completion block_on waits for
  waiter.join();
  REQUIRE(got);
  CHECK_THROWS_WITH(std::rethrow_exception(got), Catch::Contains("abandoned before it completed"));
  CHECK_THROWS_AS(std::rethrow_exception(got), cotune::error);
}
