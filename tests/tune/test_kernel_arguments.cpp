// Tests for cotune/tune/detail/kernel_arguments.hpp: which benchmark runs do host work besides the launch, so
// that a GPU benchmarker never captures them into a graph and replays them; a call's description and
// pruning.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/tune/detail/kernel_arguments.hpp>

using args_t = cotune::kernel_arguments<cotune::host_span<float>, int>;

TEST_CASE("a run does host work when a hook, reset_to_zero, restore_value or the config's pre-hook runs in it",
          "[tune][kernel_arguments]") {
  const cotune::config plain{{"BLOCK", 64}};
  cotune::config hooked{{"BLOCK", 64}};
  hooked.with_pre_hook("touch", [](const cotune::hook_args&) {});

  const args_t::options none{.arg_names = {"x", "n"}};
  const args_t bare("k", none);
  CHECK_FALSE(bare.runs_host_work(plain));
  CHECK(bare.runs_host_work(hooked));

  const args_t::options reset{.arg_names = {"x", "n"}, .reset_to_zero = {"x"}};
  CHECK(args_t("k", reset).runs_host_work(plain));
  const args_t::options restore{.arg_names = {"x", "n"}, .restore_value = {"x"}};
  CHECK(args_t("k", restore).runs_host_work(plain));
  const args_t::options pre{.arg_names = {"x", "n"}, .pre_hook = [](cotune::host_span<float>&, int&) {}};
  CHECK(args_t("k", pre).runs_host_work(plain));
  const args_t::options post{.arg_names = {"x", "n"},
                             .post_hook = [](std::exception_ptr, cotune::host_span<float>&, int&) {}};
  CHECK(args_t("k", post).runs_host_work(plain));
}

TEST_CASE("a call is described from one run of each heuristic, and pruning reuses those values",
          "[tune][kernel_arguments][heuristics]") {
  int runs = 0;
  const args_t::options opts{
      .arg_names = {"x", "n"},
      .key = {"n"},
      .early_config_prune = [](const std::vector<cotune::config>& all, const auto&, const int& n) {
        std::vector<cotune::config> kept;
        for (const auto& c : all)
          if (c.at("BLOCK").as_int() <= n) kept.push_back(c);
        return kept;
      },
      .perf_model = [](const cotune::config& c) { return double(-c.at("BLOCK").as_int()); }, // larger first
      .top_k = std::int64_t(2),
      .heuristics = {{"HALF", [&](const cotune::host_span<float>&, const int& n) {
                        ++runs;
                        return cotune::value(std::int64_t(n / 2));
                      }}}};
  const args_t arguments("k", opts);
  std::vector<float> data(8);
  const cotune::host_span<float> x(data);
  const cotune::call_description d = arguments.describe(x, 100);
  CHECK(runs == 1);
  CHECK(d.key_text == "x: float32, n=100, HALF=50");
  REQUIRE(d.heuristics.size() == 1);
  CHECK(d.heuristics[0].as_int() == 50);
  CHECK(arguments.key_text(x, 100) == d.key_text);
  runs = 0;

  const std::vector<cotune::config> configs{cotune::config{{"BLOCK", 32}}, cotune::config{{"BLOCK", 64}},
                                            cotune::config{{"BLOCK", 128}}, cotune::config{{"BLOCK", 16}}};
  const auto pruned = arguments.prune(configs, d, x, 100);
  CHECK(runs == 0); // the description's value, not a second run
  REQUIRE(pruned.size() == 2); // 128 > n is pruned early; perf_model keeps the two largest of the rest
  CHECK(pruned[0].at("BLOCK").as_int() == 64);
  CHECK(pruned[1].at("BLOCK").as_int() == 32);
  for (const auto& c : pruned) CHECK(c.at("HALF").as_int() == 50);

  // A heuristic that names a config's own parameter is refused, naming both.
  const args_t::options clash{.arg_names = {"x", "n"},
                              .heuristics = {{"BLOCK", [](const auto&...) { return cotune::value(std::int64_t(1)); }}}};
  const args_t clashing("k", clash);
  CHECK_THROWS_WITH(clashing.prune(configs, clashing.describe(x, 1), x, 1),
                    Catch::Contains("heuristic 'BLOCK' is also a parameter of config"));
}
