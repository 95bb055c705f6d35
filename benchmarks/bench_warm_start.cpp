// Figure (c): warm start. A new process whose tuning result and binaries are on disk: how long from
// process start (and from main's entry) until its first tuned call has completed?
//
// The program re-executes itself as the measured child (`--child DIR SPAWN_NS`). The first `--cold=N`
// children (3 by default) each run against an empty cache directory: the cold first call (compile
// 17 candidates, measure them, store the result and binaries). Then `--warm=N` more children (10 by
// default) find the last cold one's result and winner binary on disk; their median is the figure,
// compared with the cold median.
// "From process start" is measured from just before the parent forks the child, on the monotonic
// clock both processes share, so it includes fork, exec, dynamic linking and static initialisers.
//
//   build/bench/benchmarks/bench_warm_start [--cold=N] [--warm=N]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/process.hpp>

#include "../examples/cpu_matmul.hpp"

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock; // CLOCK_MONOTONIC: one clock for parent and child


double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// What one child reports.
struct child_figures {
  double spawn_to_first_ms = 0; ///< from the parent's fork to the first tuned call's return
  double main_to_first_ms = 0;  ///< from main's entry to the first tuned call's return
  double first_call_ms = 0;     ///< the first tuned call alone (tuning or cache lookup + launch)
  double second_call_ms = 0;    ///< a second tuned call: the kernel itself plus the lookup
  double process_ms = 0;        ///< fork to exit, seen by the parent
  int from_cache = 0;
  std::size_t compiles = 0;
};

/// The measured process: one tuner, two calls, one line of figures on stdout.
int child_main(clock_type::time_point entry, const char* cache_dir, const char* spawn_ns) {
  const clock_type::time_point spawned{clock_type::duration(std::stoll(spawn_ns))};
  cotune::knobs().cache.dir.set(cache_dir);
  constexpr int n = 128; // small: the kernel's own run (second_call_ms) stays a few ms
  const auto configs = cpu_matmul::configs();
  using signature = cpu_matmul::signature;
  cotune::autotuner<signature> tuner{{.name = "warm_start_matmul", .code = cpu_matmul::matmul_code, .entry = "matmul",
                                      .options = {"-std=c++17"}},
                                     configs,
                                     {.arg_names = {"A", "B", "C", "n"}, .key = {"n"}, .cache_results = true}};
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  const auto t0 = clock_type::now();
  tuner(a, b, c, n);
  const auto t1 = clock_type::now();
  tuner(a, b, c, n);
  const auto t2 = clock_type::now();
  if (c[0] != 0.125f * n) {
    std::fprintf(stderr, "warm start child: wrong matmul output %g (expected %g)\n", double(c[0]), 0.125 * n);
    return 1;
  }
  std::printf("figures %.3f %.3f %.3f %.3f %d %zu\n", ms_between(spawned, t1), ms_between(entry, t1), ms_between(t0, t1),
              ms_between(t1, t2), tuner.cached_tunings() == 1 ? 1 : 0, tuner.compiles());
  return 0;
}

/// Runs the child with stdout and stderr on a pipe, reads until the pipe closes, then waits for it.
/// (posix_spawn + a blocking waitpid rather than detail::run_process, whose exit polling has a
/// 20 ms granularity that would blur the "process ms" column.)
child_figures run_child(const std::string& self, const std::string& cache_dir) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw cotune::error(fmt::format("pipe2: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  const auto spawned = clock_type::now();
  std::string arg_dir = cache_dir, arg_ns = std::to_string(spawned.time_since_epoch().count());
  std::string arg_self = self, arg_flag = "--child";
  char* argv[] = {arg_self.data(), arg_flag.data(), arg_dir.data(), arg_ns.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw cotune::error(fmt::format("cannot start '{}': {}", self, std::strerror(rc)));
  }
  std::string output;
  char buf[4096];
  for (ssize_t got; (got = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const auto exited = clock_type::now();
  child_figures f;
  const auto at = output.find("figures ");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || at == std::string::npos)
    throw cotune::error(fmt::format("warm start child failed (status {}):\n{}", status, output));
  std::istringstream in(output.substr(at + 8));
  in >> f.spawn_to_first_ms >> f.main_to_first_ms >> f.first_call_ms >> f.second_call_ms >> f.from_cache >> f.compiles;
  f.process_ms = ms_between(spawned, exited);
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

} // namespace

int main(int argc, char** argv) {
  const auto entry = clock_type::now();
  if (argc == 4 && std::strcmp(argv[1], "--child") == 0) return child_main(entry, argv[2], argv[3]);

  // 10 warm processes: the median is then stable to a fraction of a millisecond on this host. 3 cold
  // ones, each with its own empty cache: a cold tuning's time follows the load of the 2 shared cores.
  int warm = 10, cold_runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a.starts_with("--warm=")) warm = std::max(1, std::stoi(std::string(a.substr(7))));
    else if (a.starts_with("--cold=")) cold_runs = std::max(1, std::stoi(std::string(a.substr(7))));
    else {
      std::fprintf(stderr, "usage: %s [--cold=N] [--warm=N]\n", argv[0]);
      return 2;
    }
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> cache_dirs;
  for (int i = 0; i < cold_runs; ++i) {
    char tmpl[] = "/tmp/cotune-bench-warm-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      return 1;
    }
    cache_dirs.emplace_back(tmpl);
  }
  const std::string& cache_dir = cache_dirs.back(); // the warm processes read what the last cold one stored

  std::printf("figure (c): warm start, time to the first tuned call in a new process (17-candidate 128x128 "
              "matmul of examples/02, result + binaries on disk)\n\n");
  std::printf("%-8s %14s %13s %13s %14s %12s %6s %9s\n", "process", "start->call ms", "main->call ms", "1st call ms",
              "2nd call ms", "process ms", "cache", "compiles");
  auto print = [](const std::string& label, const child_figures& f) {
    std::printf("%-8s %14.1f %13.1f %13.1f %14.2f %12.1f %6s %9zu\n", label.c_str(), f.spawn_to_first_ms,
                f.main_to_first_ms, f.first_call_ms, f.second_call_ms, f.process_ms, f.from_cache ? "hit" : "miss",
                f.compiles);
    std::fflush(stdout);
  };
  int rc = 0;
  try {
    std::vector<double> cold_start, cold_main, cold_first;
    for (int i = 0; i < cold_runs; ++i) {
      const child_figures f = run_child(self, cache_dirs[static_cast<std::size_t>(i)]);
      print(fmt::format("cold {}", i + 1), f);
      cold_start.push_back(f.spawn_to_first_ms);
      cold_main.push_back(f.main_to_first_ms);
      cold_first.push_back(f.first_call_ms);
    }
    const child_figures cold{.spawn_to_first_ms = median(cold_start), .main_to_first_ms = median(cold_main),
                             .first_call_ms = median(cold_first)};
    std::vector<double> start, from_main, first, process;
    for (int i = 0; i < warm; ++i) {
      const child_figures f = run_child(self, cache_dir);
      print(fmt::format("warm {}", i + 1), f);
      start.push_back(f.spawn_to_first_ms);
      from_main.push_back(f.main_to_first_ms);
      first.push_back(f.first_call_ms);
      process.push_back(f.process_ms);
    }
    const double ws = median(start), wm = median(from_main), wf = median(first);
    std::printf("\n%-40s %14s %14s %10s\n", "", fmt::format("cold median/{}", cold_runs).c_str(),
                fmt::format("warm median/{}", warm).c_str(), "cold/warm");
    std::printf("%-40s %14.1f %14.1f %9.1fx\n", "process start -> first call done (ms)", cold.spawn_to_first_ms, ws,
                cold.spawn_to_first_ms / ws);
    std::printf("%-40s %14.1f %14.1f %9.1fx\n", "main() entry -> first call done (ms)", cold.main_to_first_ms, wm,
                cold.main_to_first_ms / wm);
    std::printf("%-40s %14.1f %14.1f %9.1fx\n", "first tuned call alone (ms)", cold.first_call_ms, wf,
                cold.first_call_ms / wf);
    std::printf("warm start->first call: min %.1f ms, max %.1f ms\n", *std::min_element(start.begin(), start.end()),
                *std::max_element(start.begin(), start.end()));
    std::printf("JSON: {\"figure\": \"warm_start\", \"cold_processes\": %d, \"warm_processes\": %d, "
                "\"cold_start_to_first_ms_median\": %.2f, "
                "\"warm_start_to_first_ms_median\": %.2f, \"cold_main_to_first_ms_median\": %.2f, "
                "\"warm_main_to_first_ms_median\": %.2f, \"warm_first_call_ms_median\": %.2f, "
                "\"warm_process_ms_median\": %.2f, \"ratio_cold_over_warm\": %.2f}\n",
                cold_runs, warm, cold.spawn_to_first_ms, ws, cold.main_to_first_ms, wm, wf, median(process),
                cold.spawn_to_first_ms / ws);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  for (const auto& dir : cache_dirs) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return rc;
}
