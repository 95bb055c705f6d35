// Tests for cotune/detail/fork_server.hpp: jobs in forked worker processes, with replies, failures,
// crashes, deadlines, stop requests, concurrency and a server that dies.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

#include <cotune/detail/fork_server.hpp>

#include "../support/processes.hpp"
#include "../support/temp_dir.hpp"

using cotune::detail::fork_server;
using cotune::detail::job_outcome;
using namespace std::chrono_literals;

using cotune_test::alive;
using cotune_test::gone_soon;

namespace {

/// Set by the warm-up, which runs in the server only.
bool warmed_up = false;
void warm_up(const void*) { warmed_up = true; }

/// The job under test: the request says what to do.
std::string job(const void* context, std::string_view request) {
  const std::string& prefix = *static_cast<const std::string*>(context);
  if (request == "throw") throw std::runtime_error("the job threw this");
  if (request == "segv") {
    const rlimit no_core{0, 0}; // no core file from this deliberate crash
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::raise(SIGSEGV);
  }
  if (request.starts_with("meet:")) {
    // Waits (up to 20 s) until as many workers as asked for have arrived in the directory: jobs
    // that ran one after another would never all meet.
    const auto rest = request.substr(5);
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    const std::size_t want = std::stoul(std::string(rest.substr(colon + 1)));
    std::ofstream(dir + "/" + std::to_string(::getpid())) << "here";
    for (int i = 0; i < 2000; ++i) {
      std::size_t n = 0;
      for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
      if (n >= want) return "met";
      std::this_thread::sleep_for(10ms);
    }
    return "alone";
  }
  if (request == "exit3") ::_exit(3);
  if (request == "pid") return std::to_string(::getpid());
  if (request == "ppid") return std::to_string(::getppid()); // a persistent worker's monitor
  if (request.starts_with("segv-in:")) { // leaves a file named for its worker in the directory, then crashes
    std::ofstream(std::string(request.substr(8)) + "/" + std::to_string(::getpid())) << "ran";
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::raise(SIGSEGV);
  }
  if (request == "load") { // the dynamic loader's locks, as a host candidate's dlopen takes them
    void* h = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) ::dlclose(h);
    return h ? "loaded" : "no libz";
  }
  if (request == "warmed") return warmed_up ? "warm" : "cold";
  if (request == "hang")
    for (;;) ::pause();
  if (request == "sigterm") {
    std::raise(SIGTERM); // default action in a worker, whatever handler the caller installed
    return "survived SIGTERM";
  }
  if (request.starts_with("double:")) {
    std::string out(request.substr(7));
    out += out;
    return out;
  }
  return prefix + std::string(request);
}

const std::string prefix = "echo:";

} // namespace

TEST_CASE("a job's reply comes back from a worker process", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  auto r = server.run("hello");
  REQUIRE(r.outcome == job_outcome::ok);
  CHECK(r.reply == "echo:hello");
  CHECK(r.worker > 0);
  CHECK(r.worker != ::getpid());
  CHECK(r.worker != server.server_pid());
  CHECK(gone_soon(r.worker));
}

TEST_CASE("a job that throws is failed with the exception's message", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  auto r = server.run("throw");
  CHECK(r.outcome == job_outcome::failed);
  CHECK(r.detail == "the job threw this");
  CHECK(r.reply.empty());
}

TEST_CASE("a crashing worker is reported with its signal, and the next job runs", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  auto r = server.run("segv");
  CHECK(r.outcome == job_outcome::crashed);
  CHECK_THAT(r.detail, Catch::Contains("killed by signal 11"));
  auto next = server.run("after");
  CHECK(next.outcome == job_outcome::ok);
  CHECK(next.reply == "echo:after");
}

TEST_CASE("a worker that exits without replying is crashed with its exit status", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  auto r = server.run("exit3");
  CHECK(r.outcome == job_outcome::crashed);
  CHECK_THAT(r.detail, Catch::Contains("exited with status 3"));
}

TEST_CASE("a worker past its deadline is killed and reported as timed out", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  auto r = server.run("hang", std::chrono::steady_clock::now() + 50ms);
  CHECK(r.outcome == job_outcome::timed_out);
  REQUIRE(r.worker > 0);
  CHECK(gone_soon(r.worker));
  CHECK(server.run("x").reply == "echo:x");
}

TEST_CASE("a stop request kills the worker and reports it cancelled", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  auto r = server.run("hang", std::chrono::steady_clock::time_point::max(), stop.get_token());
  stopper.join();
  CHECK(r.outcome == job_outcome::cancelled);
  REQUIRE(r.worker > 0);
  CHECK(gone_soon(r.worker));
}

TEST_CASE("the caller's signal handlers do not run in the server's processes", "[detail][fork_server]") {
  struct sigaction handler {}, previous{};
  handler.sa_handler = [](int) {};
  REQUIRE(::sigaction(SIGTERM, &handler, &previous) == 0);
  fork_server server(&job, &prefix);
  auto r = server.run("sigterm");
  ::sigaction(SIGTERM, &previous, nullptr);
  CHECK(r.outcome == job_outcome::crashed);
  CHECK_THAT(r.detail, Catch::Contains("killed by signal 15"));
}

TEST_CASE("jobs from 8 threads each get their own reply", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string request = std::to_string(t) + "/" + std::to_string(i);
        auto r = server.run(request);
        if (r.outcome == job_outcome::ok && r.reply == "echo:" + request) ++right;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(right == 80);
}

TEST_CASE("jobs run at the same time, each in its own worker", "[detail][fork_server]") {
  cotune_test::temp_dir dir;
  fork_server server(&job, &prefix);
  std::vector<cotune::detail::job_result> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] { results[t] = server.run("meet:" + dir.path().string() + ":4"); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    CHECK(r.outcome == job_outcome::ok);
    CHECK(r.reply == "met");
  }
}

TEST_CASE("a large request and reply cross intact", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  std::string big(6 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + (i >> 13));
  auto r = server.run("double:" + big);
  REQUIRE(r.outcome == job_outcome::ok);
  CHECK(r.reply.size() == 2 * big.size());
  CHECK(r.reply == big + big);
}

TEST_CASE("a server that was killed is replaced for the next job", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  const pid_t first = server.server_pid();
  REQUIRE(server.run("a").outcome == job_outcome::ok);
  // At once: whether the request reaches the dying server or finds its socket closed, the job runs.
  REQUIRE(::kill(first, SIGKILL) == 0);
  auto r = server.run("b");
  CHECK(r.outcome == job_outcome::ok);
  CHECK(r.reply == "echo:b");
  CHECK(server.server_pid() != first);
}

TEST_CASE("the server keeps none of the caller's descriptors", "[detail][fork_server]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0); // inheritable on purpose
  fork_server server(&job, &prefix);
  REQUIRE(server.run("x").outcome == job_outcome::ok);
  ::close(fds[1]);
  // Had the server (or a worker) kept a copy of the write end, this read would never see its end.
  pollfd pfd{fds[0], POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 10'000) == 1);
  char c;
  CHECK(::read(fds[0], &c, 1) == 0);
  ::close(fds[0]);
}

TEST_CASE("destroying the server ends its process", "[detail][fork_server]") {
  pid_t pid = -1;
  {
    fork_server server(&job, &prefix);
    pid = server.server_pid();
    REQUIRE(alive(pid));
  }
  CHECK_FALSE(alive(pid));
}

TEST_CASE("the server runs in its own session, out of the caller's signal group", "[detail][fork_server]") {
  fork_server server(&job, &prefix);
  REQUIRE(server.run("x").outcome == job_outcome::ok);
  CHECK(::getsid(server.server_pid()) == server.server_pid());
  CHECK(::getpgid(server.server_pid()) != ::getpgid(0));
}

TEST_CASE("a caller without stdin and stdout still gets its replies, also from a new server",
          "[detail][fork_server]") {
  // In a child process (so this test's own streams stay open), with a 20 s limit.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(0);
    ::close(1);
    int code = 0;
    {
      fork_server server(&job, &prefix);
      if (server.run("a").reply != "echo:a") code = 1;
      ::kill(server.server_pid(), SIGKILL);
      if (server.run("b").reply != "echo:b") code = 2;
    }
    ::_exit(code);
  }
  int status = -1;
  bool ended = false;
  for (int i = 0; i < 2000 && !ended; ++i) {
    ended = ::waitpid(child, &status, WNOHANG) == child;
    if (!ended) std::this_thread::sleep_for(10ms);
  }
  if (!ended) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  CHECK(ended);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("destroying the server ends it even while a forked child holds its socket", "[detail][fork_server]") {
  pid_t server_pid = -1, holder = -1;
  {
    fork_server server(&job, &prefix);
    server_pid = server.server_pid();
    holder = ::fork(); // a copy of every descriptor, the server's socket included
    REQUIRE(holder >= 0);
    if (holder == 0) {
      ::sleep(30);
      ::_exit(0);
    }
  }
  CHECK_FALSE(alive(server_pid));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

// --- warm workers ------------------------------------------------------------------------------------

namespace {
cotune::detail::warm_workers warm(std::size_t count, std::size_t prestart = 0) {
  return {.count = count, .warm_up = &warm_up, .prestart = prestart};
}
} // namespace

TEST_CASE("a warm worker serves many jobs in one process, warmed up once in the server", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(2));
  auto first = server.run("pid");
  REQUIRE(first.outcome == job_outcome::ok);
  CHECK(first.reply == std::to_string(first.worker));
  for (int i = 0; i < 5; ++i) {
    auto r = server.run("pid");
    REQUIRE(r.outcome == job_outcome::ok);
    CHECK(r.reply == first.reply); // one caller at a time: the same warm worker each time
  }
  CHECK(server.run("warmed").reply == "warm");
  CHECK_FALSE(warmed_up); // the warm-up ran in the server, not here
  CHECK(server.warm_worker_count() == 1);
  CHECK(server.warm_jobs() == 7);
  CHECK(alive(first.worker));
}

TEST_CASE("warm workers are forked when the server starts, when asked to", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(3, 3));
  CHECK(server.warm_worker_count() == 3);
  CHECK(server.run("x").reply == "echo:x");
  CHECK(server.warm_worker_count() == 3);
}

TEST_CASE("a warm worker past its deadline is killed, and the next job gets another", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(1));
  const auto before = server.run("pid");
  REQUIRE(before.outcome == job_outcome::ok);
  auto r = server.run("hang", std::chrono::steady_clock::now() + 50ms);
  CHECK(r.outcome == job_outcome::timed_out);
  CHECK(r.worker == std::stoi(before.reply));
  CHECK(gone_soon(r.worker));
  auto next = server.run("pid");
  REQUIRE(next.outcome == job_outcome::ok);
  CHECK(next.reply != before.reply);
  CHECK(server.warm_worker_count() == 1);
}

TEST_CASE("a stop request kills a warm worker midway", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(1));
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  auto r = server.run("hang", std::chrono::steady_clock::time_point::max(), stop.get_token());
  stopper.join();
  CHECK(r.outcome == job_outcome::cancelled);
  CHECK(gone_soon(r.worker));
  CHECK(server.run("y").reply == "echo:y");
}

TEST_CASE("a crash in a warm worker fails only its job", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(1));
  auto r = server.run("segv");
  CHECK(r.outcome == job_outcome::crashed);
  CHECK_THAT(r.detail, Catch::Contains("killed by signal 11"));
  auto exited = server.run("exit3");
  CHECK(exited.outcome == job_outcome::crashed);
  CHECK_THAT(exited.detail, Catch::Contains("exited with status 3"));
  CHECK(server.run("throw").outcome == job_outcome::failed);
  CHECK(server.run("after").reply == "echo:after");
}

TEST_CASE("a warm worker killed while idle is replaced", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(1));
  const auto first = server.run("pid");
  REQUIRE(first.outcome == job_outcome::ok);
  REQUIRE(::kill(first.worker, SIGKILL) == 0);
  REQUIRE(gone_soon(first.worker));
  auto r = server.run("pid");
  REQUIRE(r.outcome == job_outcome::ok);
  CHECK(r.reply != first.reply);
}

TEST_CASE("jobs beyond the warm workers get workers of their own, all at the same time", "[detail][fork_server]") {
  cotune_test::temp_dir dir;
  fork_server server(&job, &prefix, nullptr, warm(2));
  std::vector<cotune::detail::job_result> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] { results[t] = server.run("meet:" + dir.path().string() + ":4"); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) CHECK(r.reply == "met");
  CHECK(server.warm_worker_count() == 2);
}

TEST_CASE("a killed server is replaced when a new warm worker is needed", "[detail][fork_server]") {
  fork_server server(&job, &prefix, nullptr, warm(1));
  const pid_t first = server.server_pid();
  REQUIRE(server.run("a").outcome == job_outcome::ok);
  REQUIRE(::kill(first, SIGKILL) == 0);
  CHECK(server.run("b").reply == "echo:b"); // the warm worker outlives its server
  REQUIRE(server.run("hang", std::chrono::steady_clock::now() + 50ms).outcome == job_outcome::timed_out);
  auto r = server.run("warmed"); // needs a new worker, so a new server (warmed up again)
  CHECK(r.reply == "warm");
  CHECK(server.server_pid() != first);
}

TEST_CASE("destroying the server ends its warm workers", "[detail][fork_server]") {
  pid_t worker = -1;
  {
    fork_server server(&job, &prefix, nullptr, warm(1));
    auto r = server.run("pid");
    REQUIRE(r.outcome == job_outcome::ok);
    worker = r.worker;
    REQUIRE(alive(worker));
  }
  CHECK(gone_soon(worker));
}

// --- a lane: jobs sent ahead to one persistent worker ------------------------------------------------

TEST_CASE("jobs sent ahead on a lane come back in order, from one warm worker", "[detail][fork_server][lane]") {
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  cotune::detail::fork_server_lane lane(server);
  const auto deadline = [] { return std::chrono::steady_clock::now() + 20s; };
  lane.send("pid");
  lane.send("a");
  lane.send("double:bc");
  lane.send("throw");
  CHECK(lane.in_flight() == 4);
  const auto pid = lane.receive(deadline());
  REQUIRE(pid.outcome == job_outcome::ok);
  CHECK(pid.reply == std::to_string(pid.worker));
  CHECK(lane.receive(deadline()).reply == "echo:a");
  const auto doubled = lane.receive(deadline());
  CHECK(doubled.reply == "bcbc");
  CHECK(doubled.worker == pid.worker);
  const auto threw = lane.receive(deadline());
  CHECK(threw.outcome == job_outcome::failed);
  CHECK(threw.detail == "the job threw this");
  CHECK(lane.in_flight() == 0);
  CHECK(lane.receive(deadline()).outcome == job_outcome::lost); // nothing in flight
  lane.send("pid");
  CHECK(lane.receive(deadline()).reply == pid.reply); // the same worker all along
}

TEST_CASE("on a lane, a crash or a hang costs its job alone: the jobs behind it run in a new worker",
          "[detail][fork_server][lane]") {
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  cotune::detail::fork_server_lane lane(server);
  const auto deadline = [] { return std::chrono::steady_clock::now() + 20s; };
  lane.send("pid");
  lane.send("segv");
  lane.send("pid");
  const auto first = lane.receive(deadline());
  REQUIRE(first.outcome == job_outcome::ok);
  const auto crashed = lane.receive(deadline());
  CHECK(crashed.outcome == job_outcome::crashed);
  CHECK_THAT(crashed.detail, Catch::Contains("killed by signal 11"));
  const auto after = lane.receive(deadline());
  REQUIRE(after.outcome == job_outcome::ok);
  CHECK(after.reply != first.reply);
  CHECK(gone_soon(first.worker));

  lane.send("hang");
  lane.send("pid");
  const auto hung = lane.receive(std::chrono::steady_clock::now() + 100ms);
  CHECK(hung.outcome == job_outcome::timed_out);
  CHECK(gone_soon(hung.worker));
  const auto next = lane.receive(deadline());
  REQUIRE(next.outcome == job_outcome::ok);
  CHECK(next.reply != after.reply);
  CHECK(next.reply != std::to_string(hung.worker));
}

TEST_CASE("a lane's worker that exits between jobs is replaced, and its unstarted job runs there",
          "[detail][fork_server][lane]") {
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  cotune::detail::fork_server_lane lane(server);
  const auto deadline = [] { return std::chrono::steady_clock::now() + 20s; };
  lane.send("exit3");
  lane.send("x");
  const auto exited = lane.receive(deadline());
  CHECK(exited.outcome == job_outcome::crashed);
  CHECK_THAT(exited.detail, Catch::Contains("exited with status 3"));
  CHECK(lane.receive(deadline()).reply == "echo:x");
}

namespace {
std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}
} // namespace

TEST_CASE("on a lane, a job that killed the worker that took it is crashed and never sent again, even when "
          "the job behind it could not be written",
          "[detail][fork_server][lane]") {
  // A write to a worker that has died fails, and says nothing of which jobs it had taken: the lane once
  // dropped the worker unread and sent every job in flight again, so a crashing job killed worker after
  // worker, and its outcome was `lost` ("no persistent worker could be sent the job") when the writes to
  // three of them failed in a row (the isolated tuning's quarantine test, under load).
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  cotune::detail::fork_server_lane lane(server);
  cotune_test::temp_dir dir;
  const auto deadline = [] { return std::chrono::steady_clock::now() + 20s; };
  lane.send("ppid");
  const auto first = lane.receive(deadline());
  REQUIRE(first.outcome == job_outcome::ok);
  const pid_t monitor = std::stoi(first.reply);
  lane.send("segv-in:" + dir.path().string()); // written to the lane's worker, which takes it and dies
  // Its monitor reports it and ends: no one holds the worker's end of the channel any more, and the next
  // job's write fails for certain.
  REQUIRE(gone_soon(first.worker));
  REQUIRE(gone_soon(monitor));
  lane.send("pid");
  const auto crashed = lane.receive(deadline());
  CHECK(crashed.outcome == job_outcome::crashed);
  CHECK_THAT(crashed.detail, Catch::Contains("killed by signal 11"));
  CHECK(crashed.worker == first.worker);
  const auto after = lane.receive(deadline());
  REQUIRE(after.outcome == job_outcome::ok);
  CHECK(after.reply != std::to_string(first.worker));
  CHECK(files_in(dir.path()) == 1); // the crashing job ran once
  CHECK(lane.in_flight() == 0);
}

TEST_CASE("on a lane, a crashing job sent with another to a new worker runs once, whenever the worker dies",
          "[detail][fork_server][lane]") {
  // Each round the lane has no worker when asked: both jobs are written to a new one, which may die of
  // the first before the second is written (then that write fails).
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  cotune_test::temp_dir dir;
  const auto deadline = [] { return std::chrono::steady_clock::now() + 20s; };
  constexpr int rounds = 20;
  for (int i = 0; i < rounds; ++i) {
    cotune::detail::fork_server_lane lane(server);
    lane.send("segv-in:" + dir.path().string());
    lane.send("x");
    const auto crashed = lane.receive(deadline());
    CHECK(crashed.outcome == job_outcome::crashed);
    CHECK_THAT(crashed.detail, Catch::Contains("killed by signal 11"));
    CHECK(lane.receive(deadline()).reply == "echo:x");
  }
  CHECK(files_in(dir.path()) == rounds);
}

TEST_CASE("a lane destroyed with jobs in flight ends their worker", "[detail][fork_server][lane]") {
  fork_server server(&job, &prefix, nullptr, warm(1, 1));
  pid_t worker = -1;
  {
    cotune::detail::fork_server_lane lane(server);
    lane.send("pid");
    lane.send("hang");
    const auto r = lane.receive(std::chrono::steady_clock::now() + 20s);
    REQUIRE(r.outcome == job_outcome::ok);
    worker = r.worker;
  }
  CHECK(gone_soon(worker));
  CHECK(server.run("y").reply == "echo:y");
}

TEST_CASE("a server forked while another thread holds the loader's lock still loads libraries",
          "[detail][fork_server]") {
  // glibc resets its loader locks in a forked child, all but the list lock that dlopen and dlclose
  // hold while they change the list of loaded objects (and dl_iterate_phdr while it walks it): a server
  // forked in that moment inherited it held, and every worker's dlopen blocked for ever (4 tunings in
  // 10 lost every candidate as `hung` with a thread of the program loading a plugin in a loop). Here a
  // thread holds that lock, for a second, across the server's fork.
  struct holding {
    std::mutex m;
    std::condition_variable cv;
    bool held = false;
  } h;
  std::thread holder([&h] {
    (void)::dl_iterate_phdr(
        [](dl_phdr_info*, std::size_t, void* p) {
          auto& st = *static_cast<holding*>(p);
          {
            std::lock_guard l(st.m);
            st.held = true;
          }
          st.cv.notify_all();
          std::this_thread::sleep_for(1s);
          return 1;
        },
        &h);
  });
  {
    std::unique_lock l(h.m);
    h.cv.wait(l, [&] { return h.held; });
  }
  fork_server server(&job, &prefix); // forks its server now, with the lock held by the other thread
  holder.join();
  const auto r = server.run("load", std::chrono::steady_clock::now() + 15s);
  CHECK(r.outcome == job_outcome::ok);
  CHECK(r.reply == "loaded");
}
