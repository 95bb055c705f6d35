// Tests for cotune/detail/process.hpp: child processes with captured output, deadlines and stop tokens.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <stop_token>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cotune/detail/process.hpp>

#include "../support/processes.hpp"
#include "../support/temp_dir.hpp"

using cotune::detail::run_process;
using namespace std::chrono_literals;

using cotune_test::alive;
using cotune_test::gone_soon;

namespace {

pid_t first_pid(const std::string& output) { return static_cast<pid_t>(std::stol(output)); }

} // namespace

TEST_CASE("run_process captures stdout and stderr and the exit code", "[detail][process]") {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains("out\n"));
  CHECK_THAT(r.output, Catch::Contains("err\n"));
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.cancelled);
  CHECK(run_process({"true"}).exit_code == 0);
  CHECK(run_process({"false"}).exit_code == 1);
}

TEST_CASE("arguments are passed as they are, without a shell", "[detail][process]") {
  auto r = run_process({"printf", "%s|", "a b", "$HOME", "'q'", ""});
  CHECK(r.output == "a b|$HOME|'q'||");
}

TEST_CASE("the child reads /dev/null and inherits the environment", "[detail][process]") {
  CHECK(run_process({"cat"}).output.empty());
  cotune_test::scoped_env env("COTUNE_TEST_PROCESS_VAR", std::string("inherited"));
  CHECK(run_process({"sh", "-c", "printf %s \"$COTUNE_TEST_PROCESS_VAR\""}).output == "inherited");
}

TEST_CASE("extra environment entries are added and replace inherited ones", "[detail][process]") {
  cotune_test::scoped_env a("COTUNE_TEST_PROCESS_A", std::string("inherited"));
  cotune_test::scoped_env b("COTUNE_TEST_PROCESS_B", std::string("kept"));
  auto r = run_process({"sh", "-c", "printf '%s|%s|%s' \"$COTUNE_TEST_PROCESS_A\" \"$COTUNE_TEST_PROCESS_B\" \"$COTUNE_TEST_PROCESS_C\""},
                       {}, {}, {"COTUNE_TEST_PROCESS_A=replaced", "COTUNE_TEST_PROCESS_C=added"});
  CHECK(r.output == "replaced|kept|added");
  CHECK(cotune_test::getenv_opt("COTUNE_TEST_PROCESS_A") == std::optional<std::string>("inherited"));
  // A variable whose name is a prefix of another is not replaced by mistake.
  cotune_test::scoped_env ab("COTUNE_TEST_PROCESS_AB", std::string("long"));
  r = run_process({"sh", "-c", "printf %s \"$COTUNE_TEST_PROCESS_AB\""}, {}, {}, {"COTUNE_TEST_PROCESS_A=x"});
  CHECK(r.output == "long");
}

TEST_CASE("output larger than a pipe buffer is read without deadlock", "[detail][process]") {
  auto r = run_process({"head", "-c", "1000000", "/dev/zero"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.size() == 1000000);
}

TEST_CASE("a child killed by a signal reports 128 + the signal", "[detail][process]") {
  CHECK(run_process({"sh", "-c", "kill -TERM $$"}).exit_code == 128 + SIGTERM);
}

TEST_CASE("a program that cannot be started is an error naming it", "[detail][process]") {
  CHECK_THROWS_WITH(run_process({"cotune-no-such-program-xyz"}), Catch::Contains("cotune-no-such-program-xyz"));
  CHECK_THROWS_AS(run_process({}), std::invalid_argument);
}

TEST_CASE("the deadline kills the whole process group", "[detail][process]") {
  // The background sleep holds the output pipe open: only killing the group ends the read.
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process({"sh", "-c", "sleep 100 & echo $!; wait"}, 300ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(r.timed_out);
  CHECK_FALSE(r.cancelled);
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(elapsed < 60s); // not the 100 s of the sleep (a bound on hanging, not a timing assertion)
  REQUIRE_FALSE(r.output.empty());
  CHECK(gone_soon(first_pid(r.output)));
}

TEST_CASE("a stop request kills the whole process group", "[detail][process]") {
  std::stop_source source;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(200ms);
    source.request_stop();
  });
  auto r = run_process({"sh", "-c", "sleep 100 & echo $!; wait"}, {}, source.get_token());
  CHECK(r.cancelled);
  CHECK_FALSE(r.timed_out);
  REQUIRE_FALSE(r.output.empty());
  CHECK(gone_soon(first_pid(r.output)));
}

TEST_CASE("a stop requested before the start ends the child at once", "[detail][process]") {
  std::stop_source source;
  source.request_stop();
  auto r = run_process({"sleep", "100"}, {}, source.get_token());
  CHECK(r.cancelled);
  CHECK(r.exit_code == 128 + SIGKILL);
}

TEST_CASE("no timeout means no limit", "[detail][process]") {
  auto r = run_process({"sh", "-c", "sleep 0.3; echo done"}, 0ms);
  CHECK(r.exit_code == 0);
  CHECK(r.output == "done\n");
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("what the program leaves running in its group is killed when it ends", "[detail][process]") {
  // The background sleep keeps stdout open; the call returns once the shell exits.
  auto r = run_process({"sh", "-c", "sleep 100 & echo $!"});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  REQUIRE_FALSE(r.output.empty());
  CHECK(gone_soon(first_pid(r.output)));
}

TEST_CASE("a process that leaves the group cannot hold the call past the grace period", "[detail][process]") {
  // setsid moves the sleep out of reach of the group kill (the shell's background child is not a
  // group leader, so setsid execs the sleep in place and $! is its pid); it still holds the pipe.
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process({"sh", "-c", "setsid sleep 20 & echo $!"});
  CHECK(r.exit_code == 0);
  CHECK(std::chrono::steady_clock::now() - start < 15s); // well under the 20 s sleep
  REQUIRE_FALSE(r.output.empty());
  ::kill(first_pid(r.output), SIGKILL); // tidy up the escaped sleep, by its id
}

TEST_CASE("a child whose channel closed is collected within the grace, killed if it is stuck", "[detail][process]") {
  // The GPU isolation pool collects a worker whose socket closed: one that is ending says how it ended;
  // one stuck on its way out (a driver's teardown, say) must not hold the tuning for ever.
  int channel = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(channel >= 0);
  cotune::detail::child_process ending("/bin/sh", {"sh", "-c", "exit 3"}, {}, channel);
  CHECK(ending.reap_within(std::chrono::milliseconds(10'000)) == "exited with status 3");
  CHECK(!ending.running());
  cotune::detail::child_process stuck("/bin/sleep", {"sleep", "600"}, {}, channel);
  CHECK(stuck.reap_within(std::chrono::milliseconds(200)) == "still running 200 ms after its channel closed, so killed");
  CHECK(!stuck.running());
  CHECK(stuck.reap_within(std::chrono::milliseconds(200)) == "gone");
  ::close(channel);
}
