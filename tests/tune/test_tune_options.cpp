// Tests for cotune/tune/tune_options.hpp through real host tunings: hooks, grid, on_load and verify as
// generic lambdas or lambdas of the leading arguments only; `constants` written without a hook; a new
// key's heuristics run once; a one-config tuning says it was not measured.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>

#include "tuning_fixture.hpp"

using namespace cotune;
using cotune_test::cost_configs;
using cotune_test::no_globals_backend;
using cotune_test::private_cache;
using cotune_test::quick_bench;

namespace {

/// out[i] = table[i % 4] * (i + 1), COST times over; `table` is a module global (zero unless written).
const kernel_source table_kernel{.name = "table_times",
                                 .code = "int table[4];\n"
                                         "extern \"C\" void table_times(int* out, int n) {\n"
                                         "  for (int r = 0; r < COST; ++r)\n"
                                         "    for (int i = 0; i < n; ++i) out[i] = table[i % 4] * (i + 1);\n"
                                         "}",
                                 .entry = "table_times"};

using table_tuner = autotuner<void(host_span<int>, int)>;

const std::array<int, 4> table_data{1, 2, 3, 4};

std::optional<std::string> table_wrong(const std::vector<int>& out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != table_data[i % 4] * int(i + 1))
      return fmt::format("out[{}] = {}, expected {}", i, out[i], table_data[i % 4] * int(i + 1));
  return std::nullopt;
}

} // namespace

TEST_CASE("hooks, grid, on_load and verify take generic lambdas and lambdas of their leading arguments",
          "[tune][tune_options][hooks]") {
  private_cache cache;
  auto in_process = knobs().autotuning.isolate.scoped("off"); // the counters below live in this process
  std::atomic<int> loads{0}, pre{0}, post{0}, grids{0}, verified{0};
  table_tuner tuner{table_kernel, cost_configs({4, 1}),
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .pre_hook = [&] { ++pre; },                                   // no argument named
                     .post_hook = [&](std::exception_ptr e) { post += e ? 100 : 1; }, // the leading one only
                     .on_load = [&](const module_view& m) {                        // the module only
                       ++loads;
                       m.global<int>("table").copy_from(table_data);
                     },
                     .grid = [&](const config& c, const auto&... args) { // generic: every argument
                       static_assert(sizeof...(args) == 2);
                       ++grids;
                       return launch_grid{.x = unsigned(c.at("COST").as_int())};
                     },
                     .bench = quick_bench(),
                     .verify = [&](const config&, const host_span<int>& out) { // the first two of three
                       ++verified;
                       return table_wrong(std::vector<int>(out.data(), out.data() + out.size()));
                     }}};
  std::vector<int> out(16, -1);
  tuner(out, 16);
  const auto& result = tuner.tune_now(out, 16);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == candidate_status::ok); // verify saw on_load's table in each candidate
  }
  CHECK(loads >= 2);
  CHECK(verified == 2);
  CHECK(pre > 0);
  CHECK(post == pre); // no run failed
  CHECK(grids > 0);
  CHECK_FALSE(table_wrong(out)); // the tuned call launched the winner, set up by on_load
}

TEST_CASE("options.constants writes a module global at every load, without a hook", "[tune][tune_options][constants]") {
  private_cache cache;
  std::vector<int> out(12, -1);
  table_tuner tuner{table_kernel, cost_configs({2, 1}),
                    {.arg_names = {"out", "n"},
                     .key = {"n"},
                     .constants = {{"table", std::span<const int>(table_data)}},
                     .cache_results = true,
                     .bench = quick_bench(),
                     .verify = [](const config&, const host_span<int>& out, const int&) {
                       return table_wrong(std::vector<int>(out.data(), out.data() + out.size()));
                     }}};
  tuner(out, 12); // the default isolation: the copy loads and writes too
  for (const auto& c : tuner.tune_now(out, 12).candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == candidate_status::ok);
  }
  CHECK_FALSE(table_wrong(out));

  // A warm start loads the winner alone, and writes its constants before it first runs.
  table_tuner warm{table_kernel, cost_configs({2, 1}),
                   {.arg_names = {"out", "n"},
                    .key = {"n"},
                    .constants = {{"table", std::vector<int>(table_data.begin(), table_data.end())}},
                    .cache_results = true,
                    .bench = quick_bench()}};
  std::fill(out.begin(), out.end(), -1);
  warm(out, 12);
  CHECK(warm.cached_tunings() == 1);
  CHECK_FALSE(table_wrong(out));
}

TEST_CASE("a constant of the wrong size or a missing global fails each candidate with the sizes and the fix",
          "[tune][tune_options][constants]") {
  private_cache cache;
  auto in_process = knobs().autotuning.isolate.scoped("off");
  std::vector<int> out(4);
  table_tuner short_data{table_kernel, cost_configs({2, 1}),
                         {.arg_names = {"out", "n"}, .constants = {{"table", std::array<int, 3>{1, 2, 3}}},
                          .bench = quick_bench()}};
  CHECK_THROWS_WITH(short_data(out, 4), Catch::Contains("every candidate failed") &&
                                            Catch::Contains("tune_options::constants for kernel 'table_times'") &&
                                            Catch::Contains("12 bytes were given") && Catch::Contains("16 bytes"));
  table_tuner missing{table_kernel, cost_configs({1}),
                      {.arg_names = {"out", "n"}, .constants = {{"no_such_table", 7}}, .bench = quick_bench()}};
  CHECK_THROWS_WITH(missing(out, 4), Catch::Contains("no global variable 'no_such_table'"));
}

TEST_CASE("constants over a backend without module globals are refused at construction", "[tune][tune_options][constants]") {
  using plain_tuner = autotuner<void(host_span<int>, int), no_globals_backend>;
  CHECK_THROWS_WITH((plain_tuner{table_kernel, cost_configs({1}),
                                 {.arg_names = {"out", "n"}, .constants = {{"table", table_data}}}}),
                    Catch::Contains("tune_options::constants is set ('table')") &&
                        Catch::Contains("cotune::FindsModuleGlobals") && Catch::Contains("as a kernel argument"));
}

TEST_CASE("a new key's heuristics run once, and once more per tuned call for its key", "[tune][tune_options][heuristics]") {
  private_cache cache;
  std::atomic<int> runs{0};
  table_tuner tuner{table_kernel, cost_configs({2, 1}),
                    {.arg_names = {"out", "n"},
                     .heuristics = {{"HALF",
                                     [&](const host_span<int>&, const int& n) {
                                       ++runs;
                                       return value(std::int64_t(n / 2));
                                     }}},
                     .constants = {{"table", table_data}},
                     .bench = quick_bench()}};
  std::vector<int> out(8);
  tuner(out, 8);
  // The call's key (1), then its description for the tuning: the key's text and the value every
  // candidate gets (1). Pruning and the job reuse that value.
  CHECK(runs == 2);
  const auto& result = tuner.tune_now(out, 8);
  CHECK(result.key_text.find("HALF=4") != std::string::npos);
  for (const auto& c : result.candidates) CHECK(c.cfg.at("HALF").as_int() == 4);
  const int after_tuning = runs;
  tuner(out, 8);
  CHECK(runs == after_tuning + 1); // the tuned call: its key alone
}

TEST_CASE("a one-config tuning says that it ran its config once without timing it", "[tune][tune_options][single]") {
  private_cache cache;
  std::vector<int> out(8, -1);
  std::FILE* captured = std::tmpfile();
  REQUIRE(captured);
  table_tuner tuner{table_kernel, cost_configs({1}),
                    {.arg_names = {"out", "n"},
                     .constants = {{"table", table_data}},
                     .bench = quick_bench(),
                     .observers = {std::make_shared<printing_observer>(captured, true, false)}}};
  tuner(out, 8);
  CHECK_FALSE(table_wrong(out)); // it ran
  const auto& result = tuner.tune_now(out, 8);
  REQUIRE(result.candidates.size() == 1);
  CHECK(result.candidates[0].method == single_config_method);
  CHECK(result.candidates[0].time[0] == 0.0);
  std::rewind(captured);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), captured));
  std::fclose(captured);
  INFO(text);
  CHECK(text.find("single config (not measured)") != std::string::npos);
  CHECK(text.find("not timed") != std::string::npos);
  CHECK(text.find("0.0000") == std::string::npos); // no time that was never measured
}

namespace {

/// What isolation_applies reads of a backend whose candidates run in a worker process of its own (CUDA, HIP).
struct worker_isolating {
  static constexpr bool worker_isolation = true;
};

} // namespace

TEST_CASE("constants keep a tuning out of an isolation worker, which loads its own modules, and say so",
          "[tune][tune_options][constants][isolation]") {
  const std::vector<config> configs{config{{"COST", 1}}};
  tuning_settings plain;
  std::string why;
  CHECK(detail::isolation_applies<worker_isolating>(true, "on", plain, configs, why));
  CHECK(why.empty());
  tuning_settings with_constants;
  with_constants.constants = {{"table", table_data}};
  CHECK_FALSE(detail::isolation_applies<worker_isolating>(true, "on", with_constants, configs, why));
  CHECK_THAT(why, Catch::Contains("constants (written into this process's modules; a worker loads its own)") &&
                      Catch::Contains("measured in-process"));
  // A forked copy (the host) loads through this process's code: constants are written there too.
  why.clear();
  CHECK(detail::isolation_applies<host_backend>(true, "on", with_constants, configs, why));
  CHECK(why.empty());
}

namespace {

/// A benchmarker of the program's own (what it measures is not what a worker's timer measures).
struct own_benchmarker {};

} // namespace

TEST_CASE("a benchmarker of the program's own keeps a tuning out of an isolation worker, which would bypass it, "
          "and says so",
          "[tune][tune_options][isolation]") {
  const std::vector<config> configs{config{{"COST", 1}}};
  tuning_settings plain;
  std::string why;
  CHECK_FALSE(detail::isolation_applies<worker_isolating, own_benchmarker>(true, "on", plain, configs, why));
  CHECK_THAT(why, Catch::Contains("benchmarker of its own") && Catch::Contains("measured in-process") &&
                      Catch::Contains("COTUNE_ISOLATE=off silences this"));
  // The backend's own benchmarker, named or not, is what a worker measures with.
  why.clear();
  CHECK(detail::isolation_applies<worker_isolating, cotune::default_benchmarker_t<worker_isolating>>(true, "on", plain,
                                                                                                     configs, why));
  CHECK(why.empty());
  // A forked copy runs the program's own benchmarker itself.
  CHECK(detail::isolation_applies<host_backend, own_benchmarker>(true, "on", plain, configs, why));
  CHECK(why.empty());
}
