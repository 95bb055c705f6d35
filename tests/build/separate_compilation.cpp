// Built with COTUNE_SEPARATE_COMPILATION and linked against cotune::cotune_separate (its one file,
// src/cotune_separate.cpp, includes <cotune/impl/src.hpp>): proves that a program using the separately
// compiled bodies links and tunes a real host kernel, that the shipped-database hook, compiled in the
// library, is installed, and that a program compiles a combination of its own once with cotune's
// macros (separate_own_job.hpp, .cpp), and that cotune's fmt formatters link without <fmt/format.h>.
// Exits 0 on success; prints what failed otherwise.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>

#include "separate_own_job.hpp"

#if !defined(COTUNE_SEPARATE_COMPILATION) || COTUNE_HEADER_ONLY
#error "this program checks the separate mode: build it with COTUNE_SEPARATE_COMPILATION"
#endif

static const char* kernel_code = R"(
extern "C" void fill(float* x, int n) {
  for (int i = 0; i < n; i += STEP)
    for (int j = i; j < i + STEP && j < n; ++j) x[j] = 2.0f * j;
}
)";

int main() {
  if (!cotune::shipped_winner_source()) {
    std::puts("FAIL: the shipped-database lookup is not installed");
    return 1;
  }
  cotune::kernel_source kernel{.name = "separate_fill", .code = kernel_code, .entry = "fill"};
  cotune::autotuner<void(float*, int)> tuner{kernel, {cotune::config{{"STEP", 1}}, cotune::config{{"STEP", 4}}},
                                             {.arg_names = {"x", "n"}, .key = {"n"}}};
  std::vector<float> x(1000, -1.0f);
  const auto& result = tuner.tune_now(x.data(), static_cast<int>(x.size()));
  if (result.candidates.size() != 2 || result.candidates[result.winner].status != cotune::candidate_status::ok) {
    std::puts("FAIL: the tuning did not produce a winner");
    return 1;
  }
  std::fill(x.begin(), x.end(), -1.0f);
  tuner(x.data(), static_cast<int>(x.size()));
  for (int i = 0; i < static_cast<int>(x.size()); ++i)
    if (x[i] != 2.0f * i) {
      std::printf("FAIL: x[%d] = %g after the tuned call, expected %g\n", i, x[i], 2.0f * i);
      return 1;
    }
  // The database reader and the file cache are the library's copies: a round trip through them.
  cotune::batch::tuning_database db;
  db.add(cotune::batch::database_entry::from(result));
  const auto back = cotune::batch::tuning_database::from_json(db.json("s"), "s", "memory");
  if (back.size() != 1 || !back.was_signed()) {
    std::puts("FAIL: the tuning database did not read back its own text");
    return 1;
  }
  // A tuner over the program's own cache, whose job separate_own_job.cpp compiled (the link proves it).
  cotune::autotuner<void(float*, int), cotune::host_backend, cotune::host_benchmarker, separate_test::counting_cache>
      own{kernel, {cotune::config{{"STEP", 2}}, cotune::config{{"STEP", 8}}}, {.arg_names = {"x", "n"}, .key = {"n"}}};
  std::fill(x.begin(), x.end(), -1.0f);
  own(x.data(), static_cast<int>(x.size()));
  if (separate_test::counting_cache::opened == 0 || x[999] != 2.0f * 999) {
    std::printf("FAIL: the tuner over the program's own cache (opened %d times) computed x[999] = %g\n",
                separate_test::counting_cache::opened, x[999]);
    return 1;
  }
  // cotune's formatters for value and config link with <fmt/core.h> alone (the headers include no more).
  const std::string shown = fmt::format("{}|{:>6}", result.best(), cotune::value(4));
  if (shown != result.best().text() + "|     4") {
    std::printf("FAIL: fmt printed a config and a value as '%s'\n", shown.c_str());
    return 1;
  }
  std::printf("separate compilation: tuned %s, winner {%s}; own cache opened %d times\n", kernel.name.c_str(),
              result.shown(result.best()).c_str(), separate_test::counting_cache::opened);
  return 0;
}
