// Tests for cotune/detail/run_on.hpp: run elsewhere, resume on the caller's executor.

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cotune/detail/run_on.hpp>

using cotune::detail::run_on;

TEST_CASE("run_on runs the task on the other executor and resumes on the caller's", "[detail][run_on]") {
  boost::asio::io_context io;
  boost::asio::thread_pool pool(1);
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on, resumed_on;
  std::string value;
  bool void_ran = false;
  std::weak_ptr<std::string> watch;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        // A task that owns a shared_ptr and a string: its closure has a non-trivial destructor.
        auto owned = std::make_shared<std::string>("owned");
        watch = owned;
        auto op = run_on(pool.get_executor(), [owned, suffix = std::string("!")] {
          return std::pair{std::this_thread::get_id(), *owned + suffix};
        });
        auto [where, text] = co_await std::move(op);
        ran_on = where;
        value = text;
        resumed_on = std::this_thread::get_id();
        auto v = run_on(pool.get_executor(), [&] { void_ran = true; });
        co_await std::move(v);
      },
      boost::asio::detached);
  io.run();
  pool.join();
  CHECK(value == "owned!");
  CHECK(ran_on != caller);
  CHECK(resumed_on == caller);
  CHECK(void_ran);
  CHECK(watch.expired()); // every copy the task made was released (once: ASan sees a double release)
}

TEST_CASE("run_on gives the task's exception to the caller", "[detail][run_on]") {
  boost::asio::io_context io;
  boost::asio::thread_pool pool(1);
  std::string caught;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        try {
          auto op = run_on(pool.get_executor(), []() -> int { throw std::runtime_error("compile failed"); });
          (void)co_await std::move(op);
        } catch (const std::runtime_error& e) {
          caught = e.what();
        }
      },
      boost::asio::detached);
  io.run();
  pool.join();
  CHECK(caught == "compile failed");
}
