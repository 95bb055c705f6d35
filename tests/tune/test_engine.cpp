// Tests for cotune/tune/engine.hpp: the compile pool, one thread per device, the coordinator, and a
// clean shutdown. Each test makes its own engine (not engine::shared()) and uses real threads.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/engine.hpp>

using cotune::engine;
using namespace std::chrono_literals;

namespace {

// How long a test waits for work that must happen before it gives up and lets its checks fail. A
// liveness bound so that a broken engine fails instead of hanging; nothing here measures time.
constexpr auto patience = 60s;

/// Counts finished tasks; wait() returns true once `expected` have finished.
class countdown {
public:
  explicit countdown(std::size_t expected) : left_(expected) {}
  void done() {
    std::lock_guard lock(mutex_);
    if (left_ > 0 && --left_ == 0) cv_.notify_all();
  }
  [[nodiscard]] bool wait() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, patience, [&] { return left_ == 0; });
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t left_;
};

/// Tasks that note which threads ran them and how many ran at once.
class task_log {
public:
  void enter() {
    const int now = ++running_;
    int seen = most_.load();
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    std::lock_guard lock(mutex_);
    threads_.insert(std::this_thread::get_id());
  }
  void leave() { --running_; }
  [[nodiscard]] int most_at_once() const { return most_.load(); }
  [[nodiscard]] std::set<std::thread::id> threads() {
    std::lock_guard lock(mutex_);
    return threads_;
  }

private:
  std::atomic<int> running_{0}, most_{0};
  std::mutex mutex_;
  std::set<std::thread::id> threads_;
};

/// `n` tasks on `ex`, posted from `posters` threads at once; each task stays a moment so that
/// overlaps, if the executor allowed them, would happen.
template <class Executor>
void run_tasks(const Executor& ex, task_log& log, std::size_t posters, std::size_t per_poster) {
  countdown finished(posters * per_poster);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < posters; ++p)
    threads.emplace_back([&] {
      for (std::size_t i = 0; i < per_poster; ++i)
        boost::asio::post(ex, [&] {
          log.enter();
          for (int spin = 0; spin < 50; ++spin) std::this_thread::yield();
          log.leave();
          finished.done();
        });
    });
  for (auto& t : threads) t.join();
  REQUIRE(finished.wait());
}

/// The thread that runs a task posted to `ex` (no thread, `std::thread::id{}`, if none runs it).
/// Safe to call from any thread: it makes no Catch assertion.
template <class Executor>
std::thread::id thread_of(const Executor& ex) {
  auto m = std::make_shared<std::mutex>();
  auto cv = std::make_shared<std::condition_variable>();
  auto id = std::make_shared<std::thread::id>();
  boost::asio::post(ex, [m, cv, id] {
    std::lock_guard lock(*m);
    *id = std::this_thread::get_id();
    cv->notify_all();
  });
  std::unique_lock lock(*m);
  cv->wait_for(lock, patience, [&] { return *id != std::thread::id{}; });
  return *id;
}

/// Threads of this process, as the kernel lists them.
std::size_t process_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

/// Waits until the process has `n` threads again (a joined thread leaves the kernel's list just after).
bool back_to(std::size_t n) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer starts a background thread of its own at a time of its choosing, so the process's
  // thread count says nothing here; the join itself is still checked by TSan's thread-leak report.
  (void)n;
  return true;
#endif
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (process_threads() != n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  return process_threads() == n;
}

} // namespace

TEST_CASE("a private engine has the compile threads it was asked for", "[tune][engine]") {
  engine e(2);
  CHECK(e.compile_threads() == 2);
  CHECK(engine(5).compile_threads() == 5);
  CHECK(&e != &engine::shared());
}

TEST_CASE("zero compile threads means the knob, and if that is 0, the hardware threads", "[tune][engine]") {
  auto& knob = cotune::knobs().autotuning.compile_threads;
  {
    std::remove_reference_t<decltype(knob)>::scope three(knob, 3);
    CHECK(engine(0).compile_threads() == 3);
    CHECK(engine(1).compile_threads() == 1); // an explicit count wins over the knob
  }
  std::remove_reference_t<decltype(knob)>::scope zero(knob, 0);
  CHECK(engine(0).compile_threads() == std::max(1u, std::thread::hardware_concurrency()));
}

TEST_CASE("the compile pool runs as many tasks at once as it has threads, and no more", "[tune][engine]") {
  engine e(2);
  // Two tasks that each wait for the other: they finish only if they run at the same time.
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<int> met{0};
  countdown both(2);
  for (int i = 0; i < 2; ++i)
    boost::asio::post(e.compile_executor(), [&] {
      std::unique_lock lock(m);
      ++arrived;
      cv.notify_all();
      if (cv.wait_for(lock, patience, [&] { return arrived == 2; })) ++met;
      lock.unlock();
      both.done();
    });
  REQUIRE(both.wait());
  CHECK(met == 2);

  task_log log;
  run_tasks(e.compile_executor(), log, 4, 100);
  CHECK(log.most_at_once() <= 2);
  CHECK(log.threads().size() <= 2);
  CHECK_FALSE(log.threads().count(std::this_thread::get_id()));
}

TEST_CASE("tasks for one device run one at a time, all on one thread", "[tune][engine]") {
  engine e(2);
  task_log log;
  // Each poster asks for the executor itself: the same id names the same thread.
  countdown finished(4 * 250);
  std::vector<std::thread> posters;
  for (int p = 0; p < 4; ++p)
    posters.emplace_back([&] {
      auto ex = e.device_executor("x");
      for (int i = 0; i < 250; ++i)
        boost::asio::post(ex, [&] {
          log.enter();
          for (int spin = 0; spin < 50; ++spin) std::this_thread::yield();
          log.leave();
          finished.done();
        });
    });
  for (auto& t : posters) t.join();
  REQUIRE(finished.wait());
  CHECK(log.most_at_once() == 1);
  REQUIRE(log.threads().size() == 1);
  CHECK(*log.threads().begin() == thread_of(e.device_executor("x")));
  CHECK(*log.threads().begin() != std::this_thread::get_id());
  CHECK(e.device_executor("x") == e.device_executor("x"));
}

TEST_CASE("different devices get different threads, apart from the compile pool and the coordinator", "[tune][engine]") {
  engine e(2);
  const std::vector<std::string> ids{"host#0", "host#1", "cuda#0", "N5cotune12cuda_backendE#1", ""};
  std::set<std::thread::id> threads;
  for (const auto& id : ids) threads.insert(thread_of(e.device_executor(id)));
  CHECK(threads.count(std::thread::id{}) == 0);
  CHECK(threads.size() == ids.size());
  CHECK(e.device_executor("host#0") != e.device_executor("host#1"));
  // Asked again, each id still has its thread.
  for (const auto& id : ids) CHECK(threads.count(thread_of(e.device_executor(id))) == 1);
  const auto coordinator = thread_of(e.coordinator());
  CHECK(threads.count(coordinator) == 0);
  task_log compile;
  run_tasks(e.compile_executor(), compile, 2, 50);
  for (const auto& t : compile.threads()) {
    CHECK(threads.count(t) == 0);
    CHECK(t != coordinator);
  }
}

TEST_CASE("threads asking for a new device at once all get its one thread", "[tune][engine]") {
  engine e(1);
  constexpr int askers = 8;
  std::atomic<bool> go{false};
  std::vector<std::thread::id> got(askers);
  std::vector<std::thread> threads;
  for (int i = 0; i < askers; ++i)
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      got[i] = thread_of(e.device_executor("fresh"));
    });
  go = true;
  for (auto& t : threads) t.join();
  CHECK(std::set<std::thread::id>(got.begin(), got.end()).size() == 1);
  CHECK(got[0] != std::thread::id{});
}

TEST_CASE("the coordinator is one thread", "[tune][engine]") {
  engine e(2);
  task_log log;
  run_tasks(e.coordinator(), log, 4, 100);
  CHECK(log.most_at_once() == 1);
  CHECK(log.threads().size() == 1);
}

TEST_CASE("destroying an engine finishes the work already given to it and joins its threads", "[tune][engine]") {
  const std::size_t threads_before = process_threads();
  std::atomic<int> compiled{0}, benchmarked{0}, followed_up{0}, coordinated{0}, coroutines{0};
  std::atomic<bool> coroutine_hopped{true};
  {
    engine e(2);
    for (int i = 0; i < 50; ++i)
      boost::asio::post(e.compile_executor(), [&] {
        std::this_thread::sleep_for(1ms);
        ++compiled;
      });
    for (const char* id : {"a", "b"}) {
      auto ex = e.device_executor(id);
      for (int i = 0; i < 50; ++i)
        boost::asio::post(ex, [&, ex] {
          std::this_thread::sleep_for(1ms);
          ++benchmarked;
          boost::asio::post(ex, [&] { ++followed_up; }); // posted while the engine is being destroyed
        });
    }
    for (int i = 0; i < 20; ++i) boost::asio::post(e.coordinator(), [&] { ++coordinated; });
    // Tunings as the autotuner runs them: a coroutine on the coordinator that compiles on the pool,
    // then measures on a device, then finishes on the coordinator.
    for (int i = 0; i < 8; ++i)
      boost::asio::co_spawn(
          e.coordinator(),
          [&e, &coroutines, &coroutine_hopped]() -> boost::asio::awaitable<void> {
            const auto home = std::this_thread::get_id();
            const auto compile_thread = co_await boost::asio::co_spawn(
                e.compile_executor(),
                []() -> boost::asio::awaitable<std::thread::id> {
                  std::this_thread::sleep_for(2ms);
                  co_return std::this_thread::get_id();
                },
                boost::asio::use_awaitable);
            const auto device_thread = co_await boost::asio::co_spawn(
                e.device_executor("a"),
                []() -> boost::asio::awaitable<std::thread::id> { co_return std::this_thread::get_id(); },
                boost::asio::use_awaitable);
            if (compile_thread == home || device_thread == home || compile_thread == device_thread ||
                std::this_thread::get_id() != home)
              coroutine_hopped = false;
            ++coroutines;
          },
          boost::asio::detached);
  } // ~engine, with most of that still queued
  CHECK(compiled == 50);
  CHECK(benchmarked == 100);
  CHECK(followed_up == 100);
  CHECK(coordinated == 20);
  CHECK(coroutines == 8);
  CHECK(coroutine_hopped);
  CHECK(back_to(threads_before));
}

TEST_CASE("work on a device may ask for another device's thread while the engine is destroyed", "[tune][engine]") {
  // Before: ~engine joined the device threads holding the lock that device_executor takes, so this
  // task (asking for device "b" from device "a" during the join) deadlocked the destructor.
  const std::size_t threads_before = process_threads();
  std::atomic<bool> started{false}, reached_b{false};
  auto destroyed = std::async(std::launch::async, [&] {
    engine e(1);
    boost::asio::post(e.device_executor("a"), [&] {
      started = true;
      std::this_thread::sleep_for(50ms); // the destructor is joining "a" by now
      boost::asio::post(e.device_executor("b"), [&] { reached_b = true; });
    });
    while (!started) std::this_thread::sleep_for(1ms);
  });
  if (destroyed.wait_for(30s) != std::future_status::ready) {
    FAIL_CHECK("~engine deadlocked: a device task asking for a new device thread never returned");
    std::_Exit(1); // the engine's threads are stuck on a lock: nothing else can run here
  }
  destroyed.get();
  CHECK(reached_b);
  CHECK(back_to(threads_before));
}

TEST_CASE("an engine that is never used is made and destroyed cleanly", "[tune][engine]") {
  const std::size_t threads_before = process_threads();
  for (int i = 0; i < 20; ++i) {
    engine e(3);
    if (i % 2) (void)e.device_executor("d");
    CHECK(e.compile_threads() == 3);
  }
  CHECK(back_to(threads_before));
}
