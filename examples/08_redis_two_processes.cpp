// 08: two processes share one tuning through Redis. This program starts two copies of itself, each
// with its own empty local cache, at the same time; both tune the same kernel for the same key
// against the Redis server COTUNE_REDIS_URL names. One takes the key's tuning lease and measures; the
// other waits for it and reads the stored result (and the winner's binary) from Redis, measuring
// nothing. The parent checks that exactly one of them measured and that both chose the same winner.
//
//   redis-server --port 6379 &        # any Redis 5+; COTUNE_REMOTE_SECRET signs the entries
//   COTUNE_REDIS_URL=redis://127.0.0.1:6379 ./08_redis_two_processes
//
// (Its test starts a private redis-server on a free loopback port: examples/run_with_redis.sh.)
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <cotune/cotune.hpp>
#include <cotune/redis/redis.hpp>

static const char* work_code = R"(
// A loop whose cost the config sets: COST 1 is the fastest.
extern "C" void work(int* out, int n) {
  volatile int s = 0;
  for (int i = 0; i < n * COST; ++i) s += i;
  out[0] = s;
}
)";

// The tuner's cache: the local file cache in front of Redis (remote hits fill the local cache).
using shared_tuner =
    cotune::autotuner<void(int*, int), cotune::host_backend, cotune::host_benchmarker, cotune::redis::remote_cache>;

/// One copy: tune, then print what it did on one line for the parent.
int run_copy() {
  std::vector<cotune::config> configs{{{"COST", 4}}, {{"COST", 1}}, {{"COST", 2}}};
  shared_tuner tuner{{.name = "work", .code = work_code, .entry = "work"},
                     configs,
                     {.arg_names = {"out", "n"},
                      .key = {"n"},
                      .cache_results = true, // results go to the caches (local and Redis)
                      .bench = cotune::bench_options{.warmup_ms = 2, .rep_ms = 20}}};
  int out = 0;
  const auto& result = tuner.tune_now(&out, 100000);
  tuner(&out, 100000);
  std::printf("measured=%zu cached=%zu winner=%s\n", tuner.measured_tunings(), tuner.cached_tunings(),
              result.best().params_text().c_str());
  return 0;
}

/// Starts this program again as a copy with its own local cache; its stdout goes to `log`.
pid_t start_copy(const std::filesystem::path& cache, const std::filesystem::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("COTUNE_CACHE_DIR", cache.c_str(), 1);
    if (!std::freopen(log.c_str(), "w", stdout)) std::_Exit(126);
    ::execl("/proc/self/exe", "08_redis_two_processes", "--copy", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--copy") return run_copy();
  if (!std::getenv("COTUNE_REDIS_URL")) {
    std::fprintf(stderr, "set COTUNE_REDIS_URL to a running Redis server, e.g. redis://127.0.0.1:6379\n");
    return 2;
  }
  // A prefix of this run's own, so that a second run against the same server tunes again.
  const std::string prefix = "example08-" + std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr));
  ::setenv("COTUNE_REDIS_PREFIX", prefix.c_str(), 1);

  char pattern[] = "/tmp/cotune-example08-XXXXXX";
  if (!::mkdtemp(pattern)) return 2;
  const std::filesystem::path dir = pattern;
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i)
    pids.push_back(start_copy(dir / ("cache" + std::to_string(i)), dir / ("copy" + std::to_string(i) + ".log")));

  int measured = 0, cached = 0;
  std::vector<std::string> winners;
  bool copies_ok = true;
  for (int i = 0; i < 2; ++i) {
    int status = 0;
    ::waitpid(pids[i], &status, 0);
    std::ifstream in(dir / ("copy" + std::to_string(i) + ".log"));
    const std::string line{std::istreambuf_iterator<char>(in), {}};
    std::printf("copy %d: %s", i, line.c_str());
    unsigned m = 0, c = 0;
    char winner[256] = {};
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        std::sscanf(line.c_str(), "measured=%u cached=%u winner=%255[^\n]", &m, &c, winner) != 3) {
      std::printf("copy %d failed (status %d)\n", i, status);
      copies_ok = false;
      continue;
    }
    measured += static_cast<int>(m);
    cached += static_cast<int>(c);
    winners.emplace_back(winner);
  }
  std::filesystem::remove_all(dir);

  const bool shared = copies_ok && measured == 1 && cached == 1 && winners.size() == 2 && winners[0] == winners[1];
  std::printf("%d tuning measured, %d read from Redis, same winner: %s -> %s\n", measured, cached,
              winners.size() == 2 && winners[0] == winners[1] ? "yes" : "no", shared ? "OK" : "WRONG");
  return shared ? 0 : 1;
}
