// A separate process for the autotuner tests: tunes the work kernel once and prints what it did.
// Usage: child_tuner <cache dir> <n>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tuning_fixture.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  cotune::knobs().cache.dir.set(argv[1]);
  int n = std::atoi(argv[2]);
  std::vector<cotune::config> configs{{{"COST", 8}}, {{"COST", 1}}, {{"COST", 4}}, {{"COST", 16}}};
  cotune::autotuner<void(int*, int)> tuner{cotune_test::work_kernel("child_work"), configs,
                                           {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true,
                                            .bench = cotune_test::quick_bench()}};
  int out = 0;
  tuner(&out, n);
  const auto* best = tuner.best_config(&out, n);
  std::printf("measured=%zu cached=%zu compiles=%zu best=%s\n", tuner.measured_tunings(), tuner.cached_tunings(),
              tuner.compiles(), best ? best->text().c_str() : "none");
  return 0;
}
