// Tests of HIP isolation (hip/isolation.hpp, hip/isolation_worker.hpp over gpu/isolation*.hpp): the
// worker's start from this very executable, the pool's refusal and its one warning, and which tunings
// go to a worker run everywhere (here, without an AMD GPU, the worker starts, finds no device and says
// so); the faults (an illegal address, a trap, a kernel that never ends) are a [gpu] test that runs on
// an AMD GPU and skips elsewhere.

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/hip/hip.hpp>
#include <cotune/tune/detail/isolated_measure.hpp>

#include "../support/fault_kernel.hpp"
#include "../support/temp_dir.hpp"

// Not `hip`: HIP's own headers declare a namespace of that name.
namespace chip = cotune::hip;
namespace gpu = cotune::gpu;
using cotune::config;
using cotune::kernel_source;

TEST_CASE("a HIP isolation worker starts from this executable before main and answers", "[hip][isolation]") {
  // A fresh process, exec'd from /proc/self/exe, becomes a HIP worker before Catch2's main: without an
  // AMD GPU it says why it cannot serve; with one it reports ready.
  gpu::detail::isolation_worker w(chip::detail::isolation_worker_kind, 0);
  const auto why = w.ready();
  if (chip::devices().empty()) {
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("HIP device 0 in the worker"));
    CHECK(!w.alive());
  } else {
    CHECK(!why);
    CHECK(w.alive());
    CHECK(w.start_ms() > 0);
  }
}

TEST_CASE("a HIP worker that cannot start refuses every job with one warning, naming the device and why",
          "[hip][isolation]") {
  if (!chip::devices().empty()) {
    WARN("skipped: this machine has an AMD GPU, where a worker starts");
    return;
  }
  auto& pool = chip::detail::isolation_workers();
  (void)pool.take_warnings();
  gpu::detail::worker_job job;
  job.image = "not a code object";
  job.symbol = "k";
  for (int i = 0; i < 2; ++i) {
    const auto r = pool.run(0, job);
    CHECK(r.end == cotune::detail::isolated_result::ending::refused);
    CHECK_THAT(r.detail, Catch::Contains("cannot start a HIP isolation worker for device 0") &&
                             Catch::Contains("HIP device 0 in the worker") && Catch::Contains("measured in-process"));
  }
  const auto warnings = pool.take_warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("HIP isolation worker"));
  // The backend reports it with its other warnings; once only.
  CHECK(chip::hip_backend().take_warnings().empty());
}

namespace {
using iso_signature = void(chip::device_span<const float>, chip::device_span<float>, int);
using iso_options = cotune::tune_options<chip::device_span<const float>, chip::device_span<float>, int>;
} // namespace

TEST_CASE("HIP candidates go to a worker unless the tuning has hooks only its process can run", "[hip][isolation]") {
  static_assert(cotune::detail::worker_isolation<chip::hip_backend>() &&
                !cotune::detail::fork_isolation<chip::hip_backend>());
  std::string warning;
  const std::vector<config> configs{config({{"MODE", 0}})};
  iso_options plain{.arg_names = {"x", "out", "n"}};
  CHECK(cotune::detail::isolation_applies<chip::hip_backend>(true, "on", plain, configs, warning));
  CHECK(warning.empty());
  iso_options hooked{.arg_names = {"x", "out", "n"}, .post_hook = [](std::exception_ptr, auto&...) {}};
  CHECK(!cotune::detail::isolation_applies<chip::hip_backend>(true, "on", hooked, configs, warning));
  CHECK_THAT(warning, Catch::Contains("post_hook") && Catch::Contains("measured in-process"));
}

namespace {

const kernel_source faulty = cotune_test::fault_kernel("hip_iso_faulty", "__builtin_trap");

config mode(int m, int tag) { return config({{"MODE", m}, {"TAG", tag}}, cotune::launch_options{.num_warps = 2}); }

} // namespace

TEST_CASE("the HIP fault kernels compile to code objects for an AMD GPU", "[hip][isolation]") {
  // The [gpu] case below runs on an AMD GPU only; here each of its kernels at least compiles.
  if (!chip::try_hiprtc()) {
    WARN("skipped: no hiprtc here (" << chip::hiprtc_error() << ")");
    return;
  }
  cotune_test::private_cache cache;
  const chip::hip_backend backend;
  const chip::device gfx90a{.arch_name = "gfx90a", .name = "hand-made MI200"};
  for (int m = 0; m <= 3; ++m) {
    INFO("MODE " << m);
    const auto bin = backend.compile(faulty, mode(m, 0), gfx90a);
    CHECK(bin.lowered_name == "hip_iso_faulty");
    CHECK(!bin.image.empty());
  }
}

TEST_CASE("with COTUNE_ISOLATE=on a HIP illegal address, a trap and an endless kernel each cost one candidate",
          "[hip][isolation][gpu]") {
  const auto devices = chip::devices();
  if (devices.empty()) {
    WARN("skipped: no HIP device here (" << chip::availability().message << ")");
    return;
  }
  auto isolate = cotune::knobs().autotuning.isolate.scoped("on");
  auto timeout = cotune::knobs().bench.timeout_ms.scoped(1500);
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  constexpr int n = 1 << 16;
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[std::size_t(i)] = static_cast<float>(i % 97);
  chip::device_buffer<float> x(d, xs), out(d, std::size_t(n));
  const std::size_t replaced_before = chip::detail::isolation_workers().replaced();

  iso_options opts{
      .arg_names = {"x", "out", "n"},
      .key = {"n"},
      .reset_to_zero = {"out"},
      .grid = [&](const config& c, const chip::device_span<const float>&, const chip::device_span<float>&,
                  const int& len) {
        const int threads = c.launch().num_warps * d.warp_size;
        return cotune::launch_grid{.x = static_cast<unsigned>((len + threads - 1) / threads)};
      },
      .cache_results = false,
      .bench = cotune::bench_options{.warmup_ms = 2.0, .rep_ms = 10.0},
      .verify = [](const config&, const chip::device_span<const float>& in, const chip::device_span<float>& o,
                    const int&) -> std::optional<std::string> {
        const auto a = in.to_vector(), got = o.to_vector();
        for (int i = 0; i < n; ++i)
          if (got[std::size_t(i)] != 2.0f * a[std::size_t(i)]) return "out[" + std::to_string(i) + "] is wrong";
        return std::nullopt;
      }};
  const std::vector<config> configs{mode(0, 0), mode(1, 0), mode(2, 0), mode(3, 0), mode(0, 1)};
  cotune::autotuner<iso_signature, chip::hip_backend> tuner{faulty, configs, opts};
  const auto& result = tuner.tune_now(x, out, n);
  for (const auto& c : result.candidates) WARN(c.cfg.text() << ": " << to_string(c.status) << ": " << c.reason);
  using cotune::candidate_status;
  CHECK(result.candidates[0].status == candidate_status::ok);
  CHECK(result.candidates[1].status == candidate_status::crashed);
  CHECK(result.candidates[2].status == candidate_status::crashed);
  CHECK(result.candidates[3].status == candidate_status::hung);
  CHECK(result.candidates[4].status == candidate_status::ok);
  CHECK(chip::detail::isolation_workers().replaced() - replaced_before == 3);
  // The program's own device state is untouched: the winner runs and is right.
  tuner(x, out, n);
  chip::hip_backend().synchronize(d);
  const auto got = out.to_vector();
  bool right = true;
  for (int i = 0; i < n; ++i) right = right && got[std::size_t(i)] == 2.0f * xs[std::size_t(i)];
  CHECK(right);
}
