// A separate process for the journal and isolation tests (tests/tune/test_tuning_job.cpp): tunes one key
// of a kernel whose candidates may crash, printing each outcome as it happens, then a summary.
// Usage: child_journal <cache dir> <scenario: slow | finals | crash>
//   slow:  8 candidates of busy work, each measured for ~40 ms (time to be killed midway)
//   finals: as slow, but 4 of the 8 equally fast, and always 4 finalists, in interleaved rounds of ~8 ms each
//   crash: 6 candidates; the one with CRASH=1 dereferences null (COTUNE_ISOLATE=auto: in-process until it crashed)
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tuning_fixture.hpp"

namespace {

/// Prints "measured <index> <status> resumed=<0|1>" per outcome, flushed at once.
struct printing : cotune::observer {
protected:
  void on_event(const cotune::tuning_event& e) override {
    const cotune::candidate_result* r = nullptr;
    std::size_t index = 0;
    if (auto* m = std::get_if<cotune::candidate_measured>(&e)) r = m->result, index = m->index;
    if (auto* f = std::get_if<cotune::candidate_failed>(&e)) r = f->result, index = f->index;
    if (!r) return;
    std::printf("measured %zu %s resumed=%d\n", index, std::string(cotune::to_string(r->status)).c_str(),
                r->resumed ? 1 : 0);
    std::fflush(stdout);
  }
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  cotune::knobs().cache.dir.set(argv[1]);
  // `auto`: candidates run in-process until a crash has been seen (the default, `on`, isolates at once).
  cotune::knobs().autotuning.isolate.set("auto");
  const std::string scenario = argv[2];
  std::vector<cotune::config> configs;
  if (scenario == "slow")
    for (int cost : {5, 1, 6, 2, 7, 3, 8, 4}) configs.push_back(cotune::config{{"COST", cost}, {"CRASH", 0}});
  else if (scenario == "finals") {
    for (int i = 0; i < 8; ++i) configs.push_back(cotune::config{{"COST", i % 2 ? 4 : 1}, {"CRASH", 0}, {"COPY", i}});
    // The 4 best by screening are finalists, however noisy the machine (a sanitizer's build, say).
    cotune::knobs().bench.screen_margin.set(10.0);
  }
  else
    for (int i = 0; i < 6; ++i) configs.push_back(cotune::config{{"COST", 1 + i}, {"CRASH", i == 3 ? 1 : 0}});
  const double rep_ms = scenario == "crash" ? 5.0 : 40.0;
  cotune::autotuner<void(int*, int)> tuner{cotune_test::crashing_kernel("child_" + scenario), configs,
                                           {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = true,
                                            .bench = cotune::bench_options{.warmup_ms = 1.0, .rep_ms = rep_ms},
                                            .observers = {std::make_shared<printing>()}}};
  int out = 0;
  const auto& result = tuner.tune_now(&out, 2000);
  int resumed = 0, crashed = 0;
  for (const auto& c : result.candidates) {
    resumed += c.resumed ? 1 : 0;
    crashed += c.status == cotune::candidate_status::crashed ? 1 : 0;
  }
  // The winner's time to the last bit (%a): a resumed final is the journaled one, not a new measurement.
  std::printf("done resumed=%d crashed=%d rounds_resumed=%zu best=%s best_ms=%a\n", resumed, crashed,
              result.final_rounds_resumed, result.best().text().c_str(), result.candidates[result.winner].time[0]);
  return 0;
}
