// Tests for cotune/tune/kernel_arguments.hpp: which benchmark runs do host work besides the launch, so
// that a GPU benchmarker never captures them into a graph and replays them.
#include <catch2/catch.hpp>

#include <string>

#include <cotune/core/buffer.hpp>
#include <cotune/core/config.hpp>
#include <cotune/tune/kernel_arguments.hpp>

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
