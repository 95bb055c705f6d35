// Tests of the CUDA module's knobs.

#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/knobs/knob.hpp>

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;

TEST_CASE("the CUDA knobs have documented defaults and are registered", "[cuda][cuda_knobs]") {
  auto& k = cuda::cuda_knobs();
  CHECK_FALSE(k.libcuda_path.get().has_value());
  CHECK_FALSE(k.libnvrtc_path.get().has_value());
  CHECK(k.flush_factor.get() == 1.0);
  CHECK_FALSE(k.graph.get());
  CHECK(k.nvrtc_options.get().empty());
  auto all = cotune::knob_registry::instance().all();
  for (const char* env : {"COTUNE_LIBCUDA_PATH", "COTUNE_LIBNVRTC_PATH", "COTUNE_CUDA_FLUSH_FACTOR", "COTUNE_CUDA_GRAPH",
                          "COTUNE_NVRTC_OPTIONS"}) {
    INFO(env);
    auto it = std::find_if(all.begin(), all.end(), [&](auto* knob) { return knob->env() == env; });
    REQUIRE(it != all.end());
    CHECK_FALSE((*it)->doc().empty());
    CHECK((*it)->name().starts_with("cuda."));
  }
}

TEST_CASE("only the NVRTC options invalidate caches", "[cuda][cuda_knobs]") {
  auto& k = cuda::cuda_knobs();
  CHECK(k.nvrtc_options.invalidates_caches());
  CHECK_FALSE(k.flush_factor.invalidates_caches());
  CHECK_FALSE(k.graph.invalidates_caches());
  CHECK_FALSE(k.libcuda_path.invalidates_caches());
  const auto before = cotune::knob_registry::instance().invalidating_text();
  cotune_test::scoped_env env("COTUNE_NVRTC_OPTIONS", "--use_fast_math");
  CHECK(cotune::knob_registry::instance().invalidating_text() != before);
  CHECK_THAT(cotune::knob_registry::instance().invalidating_text(),
             Catch::Contains("COTUNE_NVRTC_OPTIONS=--use_fast_math"));
}

TEST_CASE("the knobs read the environment and refuse bad values", "[cuda][cuda_knobs]") {
  auto& k = cuda::cuda_knobs();
  {
    cotune_test::scoped_env env("COTUNE_CUDA_FLUSH_FACTOR", "0.5");
    CHECK(k.flush_factor.get() == 0.5);
  }
  {
    cotune_test::scoped_env env("COTUNE_CUDA_FLUSH_FACTOR", "-1");
    CHECK_THROWS_AS(k.flush_factor.get(), cotune::knob_error);
  }
  {
    cotune_test::scoped_env env("COTUNE_CUDA_GRAPH", "on");
    CHECK(k.graph.get());
  }
  {
    cotune_test::scoped_env env("COTUNE_LIBCUDA_PATH", "/opt/driver/libcuda.so.1");
    CHECK(k.libcuda_path.get() == "/opt/driver/libcuda.so.1");
  }
  CHECK_THROWS_AS(k.flush_factor.set(-0.1), cotune::knob_error);
}
