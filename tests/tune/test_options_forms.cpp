// g++ 12.2 crashes (an internal compiler error in nothrow_spec_p, cp/except.cc:1205) on one way of
// writing a tuner as a default member initialiser: `tuner_t tuner{kernel, configs, {.arg_names = ...}}`,
// the options as a bare designated braced list. These are the forms it accepts, compiled by every
// build of this test (g++ 12 and clang 14), and a tuning through each of them.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <cotune/cotune.hpp>

#include "../support/temp_dir.hpp"
#include "tuning_fixture.hpp"

namespace {

using tuner_t = cotune::autotuner<void(int*, int)>;

cotune::kernel_source counting(std::string name) {
  return {.name = std::move(name),
          .code = "extern \"C\" void count(int* out, int n) { volatile int s = 0; for (int i = 0; i < n * COST; ++i) "
                  "s += 1; out[0] = s; }\n",
          .entry = "count"};
}

const std::vector<cotune::config> two_costs{cotune::config{{"COST", 1}}, cotune::config{{"COST", 2}}};

// Form 1: the options' type named before the designated list.
struct named_type_holder {
  tuner_t tuner{counting("form_named_type"), two_costs,
                tuner_t::options{.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}};
};

// Form 2: the options made by a function.
tuner_t::options made_options() { return {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}; }
struct function_holder {
  tuner_t tuner{counting("form_function"), two_costs, made_options()};
};

// Form 3: the tuner built in the constructor's initialiser list.
struct constructor_holder {
  constructor_holder()
      : tuner(counting("form_constructor"), two_costs,
              {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}) {}
  tuner_t tuner;
};

template <class Holder>
void tunes_and_runs() {
  cotune_test::private_cache cache;
  Holder h;
  int out = 0;
  h.tuner(&out, 50);
  CHECK(h.tuner.measured_tunings() == 1);
  REQUIRE(h.tuner.best_config(&out, 50));
  CHECK(out == 50 * static_cast<int>(h.tuner.best_config(&out, 50)->at("COST").as_int()));
}

} // namespace

TEST_CASE("a tuner as a default member initialiser, with its options' type named, tunes", "[tune][options]") {
  tunes_and_runs<named_type_holder>();
}

TEST_CASE("a tuner as a default member initialiser, with options from a function, tunes", "[tune][options]") {
  tunes_and_runs<function_holder>();
}

TEST_CASE("a tuner built in a constructor's initialiser list, with designated options, tunes", "[tune][options]") {
  tunes_and_runs<constructor_holder>();
}

TEST_CASE("reset_to_zero and restore_value name what is wrong with an argument they cannot take", "[tune][options]") {
  auto message = [](tuner_t::options opts) {
    try {
      tuner_t t{counting("form_messages"), two_costs, std::move(opts)};
    } catch (const cotune::autotuner_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A scalar: passed by value, nothing to zero (Triton's message called it "neither a scalar nor a buffer").
  CHECK_THAT(message({.arg_names = {"out", "n"}, .reset_to_zero = {"n"}}),
             Catch::Contains("argument 'n' cannot be used in reset_to_zero: it is a scalar") &&
                 Catch::Contains("nothing to zero"));
  CHECK_THAT(message({.arg_names = {"out", "n"}, .restore_value = {"n"}}), Catch::Contains("nothing to restore"));
  // A raw pointer: no extent; the fix names the buffer types that have one.
  CHECK_THAT(message({.arg_names = {"out", "n"}, .reset_to_zero = {"out"}}),
             Catch::Contains("it is a raw pointer") && Catch::Contains("cotune::host_span<T>(ptr, n)"));
}
