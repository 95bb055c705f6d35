// Tests of compiled HIP candidates (hip/compiled_kernels.hpp, hip/compiled_backend.hpp): with hipcc,
// tests/hip/compiled_kernels.hip adds kernels compiled for gfx90a (COTUNE_TEST_HIPCC), whose table and
// configs are checked everywhere; tuning them is a [gpu] test that skips without an AMD GPU.

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/hip/compiled_backend.hpp>
#include <cotune/hip/hip.hpp>

#if COTUNE_TEST_HIPCC
#include "compiled_kernels.hpp"
#endif

#include "../support/temp_dir.hpp"

namespace hip = cotune::hip;

namespace {

template <int A>
void host_kernel(const float*, float*, int) {}

} // namespace

TEST_CASE("a HIP kernel is found by its host address, and its fingerprint names the build", "[hip][compiled]") {
  const auto kernels =
      hip::compiled_kernels<void(const float*, float*, int)>{}.add({{"BLOCK", 64}}, host_kernel<1>).threads_from("BLOCK");
  void* found = nullptr;
  REQUIRE(kernels.entries()[0].lookup(&found, kernels.entries()[0].host_address) == 0);
  CHECK(found == reinterpret_cast<const void*>(&host_kernel<1>));
  const hip::compiled_backend<void(const float*, float*, int)> backend{kernels};
  const hip::device gfx90a{.ordinal = 0, .arch_name = "gfx90a", .name = "hand-made gfx90a"};
  CHECK_THAT(backend.fingerprint(gfx90a),
             Catch::StartsWith("hip-compiled;" +
                               cotune::gpu::program_module_of(reinterpret_cast<const void*>(&host_kernel<1>)).build));
  CHECK(backend.configs().front().launch().threads() == 64);
  CHECK(backend.compile(backend.source("k"), backend.configs().front(), gfx90a).index == 0);
}

#if COTUNE_TEST_HIPCC

namespace {

using hip_scale_tuner = cotune::autotuner<void(hip::device_span<const float>, hip::device_span<float>, int),
                                          hip::compiled_backend<cotune_test::hip_scale_signature>>;

} // namespace

TEST_CASE("hipcc's kernels are in the table with their configs", "[hip][compiled]") {
  const auto kernels = cotune_test::hip_scale_kernels();
  REQUIRE(kernels.size() == 4);
  const hip::compiled_backend<cotune_test::hip_scale_signature> backend{kernels};
  REQUIRE(backend.configs().size() == 4);
  CHECK(backend.configs()[0] == cotune::config({{"BLOCK", 64}, {"ITEMS", 1}}, {.threads_per_block = 64}));
  CHECK(backend.configs()[3] == cotune::config({{"BLOCK", 256}, {"ITEMS", 4}}, {.threads_per_block = 256}));
}

TEST_CASE("compiled HIP candidates are tuned on the GPU and the winner computes the reference",
          "[hip][compiled][gpu]") {
  const int n = 100'003;
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[std::size_t(i)] = static_cast<float>(i % 101);
  const auto devices = hip::devices();
  if (devices.empty()) {
    WARN("skipped: no HIP device here (" << hip::availability().message << ")");
    return;
  }
  const auto& d = devices.front();
  cotune_test::private_cache cache;
  hip::device_buffer<float> x(d, xs), y(d, std::size_t(n));
  const hip::compiled_backend<cotune_test::hip_scale_signature> backend{cotune_test::hip_scale_kernels()};
  hip_scale_tuner::options o;
  o.arg_names = {"x", "y", "n"};
  o.key = {"n"};
  o.grid = [](const cotune::config& c, const auto&, const auto&, const int& count) {
    return cotune::grid(c, cdiv(count, cotune::p("BLOCK") * cotune::p("ITEMS")));
  };
  o.bench = cotune::bench_options{.warmup_ms = 2.0, .rep_ms = 10.0};
  hip_scale_tuner tuner{backend.source("hip_compiled_scale"), backend.configs(), o, backend};
  const auto& result = tuner.tune_now(x, y, n);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
  }
  y.zero();
  tuner(x, y, n);
  backend.synchronize(d);
  const auto got = y.to_vector();
  bool right = true;
  for (std::size_t i = 0; i < got.size(); ++i) right = right && got[i] == 2.0f * xs[i] + 1.0f;
  CHECK(right);
}

#endif
