// Tests for cotune/detail/async_queue.hpp: many producers, one coroutine consumer.

#include <catch2/catch.hpp>

#include <set>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cotune/detail/async_queue.hpp>

using cotune::detail::async_queue;

TEST_CASE("every item pushed from many threads is popped exactly once", "[detail][async_queue]") {
  boost::asio::io_context io;
  async_queue<int> q;
  constexpr int producers = 4, per_producer = 2000;
  std::multiset<int> seen;
  std::thread::id consumer_thread;
  // The queue holds no work on the io_context while the consumer waits: keep it running until done.
  auto work = boost::asio::make_work_guard(io);
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        for (int i = 0; i < producers * per_producer; ++i) {
          auto popping = q.pop();
          seen.insert(co_await std::move(popping));
          if (std::this_thread::get_id() != consumer_thread) consumer_thread = std::this_thread::get_id();
        }
        work.reset();
      },
      boost::asio::detached);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&q, p] {
      for (int i = 0; i < per_producer; ++i) q.push(p * per_producer + i);
    });
  io.run();
  for (auto& t : threads) t.join();
  REQUIRE(seen.size() == producers * per_producer);
  CHECK(std::set<int>(seen.begin(), seen.end()).size() == seen.size());
  CHECK(consumer_thread == std::this_thread::get_id()); // resumed on its own executor
}

TEST_CASE("items pushed before the first pop are kept in order", "[detail][async_queue]") {
  boost::asio::io_context io;
  async_queue<int> q;
  for (int i = 0; i < 5; ++i) q.push(i);
  std::vector<int> got;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        for (int i = 0; i < 5; ++i) {
          auto popping = q.pop();
          got.push_back(co_await std::move(popping));
        }
      },
      boost::asio::detached);
  io.run();
  CHECK(got == std::vector<int>{0, 1, 2, 3, 4});
}
