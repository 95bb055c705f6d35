// Tests of CUDA isolation (gpu/isolation.hpp, gpu/isolation_worker.hpp, gpu/isolation_protocol.hpp, their
// CUDA side in cuda/isolation*.hpp, tune/isolated_measure.hpp). The protocol, the worker's start from this very executable and the
// mapping of endings to statuses run everywhere; the faults (an illegal address, a trap, a kernel that
// never ends) are [gpu] tests that skip without a device. The GPU tests also print the issue 10 item 4
// figures as `FIGURE {json}` lines (respawn p50/p99, configs lost per fault, isolation overhead).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/core.h>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>
#include <cotune/detail/unique_fd.hpp>
#include <cotune/tune/detail/isolated_measure.hpp>

#include "../support/fault_kernel.hpp"
#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;
namespace gpu = cotune::gpu;
using cotune::config;
using cotune::kernel_source;

TEST_CASE("an isolation job survives its encoding byte for byte", "[cuda][isolation]") {
  gpu::detail::worker_job j;
  j.timed = true;
  j.image = std::string("\x7f" "ELF\0cubin", 9);
  j.symbol = "_Z6kernelPf";
  j.grid = {7, 2, 1};
  j.block = {128, 1, 1};
  j.shared_bytes = 65536;
  j.timeout_ms = 1500;
  j.bench = {.warmup_ms = 3, .rep_ms = 9, .quantiles = {0.5, 0.2, 0.8}, .noise_target = 0.01, .capturable = false};
  j.flush_factor = 1.5;
  j.batch_below_us = 100;
  j.graph = true;
  gpu::detail::worker_param dev{.device = true, .offset = 256, .extent = 4096, .zero = true, .restore = false,
                                .poison = true};
  dev.handle[0] = 'h';
  dev.handle[63] = 'z';
  j.params = {dev, {.bytes = std::string("\x01\x00\x00\x00", 4)}};
  const auto back = gpu::detail::decode_job(gpu::detail::encode(j));
  CHECK(back.timed);
  CHECK(back.image == j.image);
  CHECK(back.symbol == j.symbol);
  CHECK(back.grid == j.grid);
  CHECK(back.block == j.block);
  CHECK(back.shared_bytes == 65536);
  CHECK(back.timeout_ms == 1500);
  CHECK(back.bench.warmup_ms == 3);
  CHECK(back.bench.rep_ms == 9);
  CHECK(back.bench.quantiles == j.bench.quantiles);
  CHECK(back.bench.noise_target == j.bench.noise_target);
  CHECK(!back.bench.min_samples);
  CHECK(back.bench.capturable == std::optional<bool>(false));
  CHECK(back.flush_factor == 1.5);
  CHECK(back.batch_below_us == 100);
  CHECK(back.graph);
  REQUIRE(back.params.size() == 2);
  CHECK(back.params[0].device);
  CHECK(back.params[0].handle == dev.handle);
  CHECK(back.params[0].offset == 256);
  CHECK(back.params[0].extent == 4096);
  CHECK(back.params[0].zero);
  CHECK(!back.params[0].restore);
  CHECK(back.params[0].poison);
  CHECK(!back.params[1].device);
  CHECK(back.params[1].bytes == j.params[1].bytes);

  const std::vector<double> v{1.5, 0.25, 7.0};
  CHECK(gpu::detail::decode_values(gpu::detail::encode_values(v)) == v);
}

TEST_CASE("a truncated or padded isolation message is refused, not misread", "[cuda][isolation]") {
  gpu::detail::worker_job j;
  j.image = "cubin";
  j.params = {{.bytes = "abcd"}};
  const std::string bytes = gpu::detail::encode(j);
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, bytes.size() / 2, bytes.size() - 1})
    CHECK_THROWS_WITH(gpu::detail::decode_job(std::string_view(bytes).substr(0, cut)), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(gpu::detail::decode_job(bytes + "x"), Catch::Contains("trailing"));
  CHECK_THROWS(gpu::detail::decode_values(gpu::detail::encode_values({1.0}) + "y"));
}

TEST_CASE("a frame for a peer that is gone is a false return, not a SIGPIPE", "[cuda][isolation]") {
  // A worker killed between the pool's alive() check and the next job (the OOM killer's pick): the
  // parent's send must fail, not raise SIGPIPE, whose default action ends the tuning's process (and
  // this test program).
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  const cotune::detail::unique_fd parent(sv[0]);
  { const cotune::detail::unique_fd gone(sv[1]); }
  CHECK_FALSE(gpu::detail::send_frame(parent.get(), gpu::detail::tag_job, std::string(std::size_t{1} << 20, 'k')));
  CHECK_FALSE(gpu::detail::send_frame(parent.get(), gpu::detail::tag_job, {}));
}

namespace {

// A worker kind of this test's own, for the pool's side with real processes and no GPU: started from
// this executable like the CUDA worker, it lives by a plan. COTUNE_TEST_POOL_PLANS holds one plan per
// device ordinal ("rs;RRs"), a letter per life of that device's workers, counted in the files of
// COTUNE_TEST_POOL_DIR: 's' serves every job (values {life}); 'r' reports ready with its socket already
// shut for reading, so no job can be sent to it, and stays running; 'R' does the same and exits.
inline constexpr gpu::detail::worker_kind planned_worker_kind{"test", "COTUNE_TEST_POOL_WORKER",
                                                              "cotune-test-pool-worker", "test_cuda_isolation.cpp"};

[[noreturn]] void planned_worker(int fd, int ordinal) {
  const char* dir = std::getenv("COTUNE_TEST_POOL_DIR");
  const char* plans = std::getenv("COTUNE_TEST_POOL_PLANS");
  if (!dir || !plans) ::_exit(4);
  std::string plan = plans;
  for (int i = 0; i < ordinal; ++i) plan = plan.substr(std::min(plan.size(), plan.find(';') + 1));
  plan = plan.substr(0, plan.find(';'));
  std::size_t life = 0;
  while (::open(fmt::format("{}/{}-{}", dir, ordinal, life).c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600) < 0)
    ++life;
  const char how = life < plan.size() ? plan[life] : 's';
  if (how == 'r' || how == 'R') {
    ::shutdown(fd, SHUT_RD);
    (void)gpu::detail::send_frame(fd, gpu::detail::tag_ready, {});
    if (how == 'R') ::_exit(0);
    for (;;) ::pause();
  }
  if (!gpu::detail::send_frame(fd, gpu::detail::tag_ready, {})) ::_exit(0);
  for (;;) {
    auto f = gpu::detail::receive_frame(fd, std::chrono::steady_clock::time_point::max());
    if (f.end != gpu::detail::frame::ending::ok) ::_exit(0);
    (void)gpu::detail::decode_job(f.payload);
    (void)gpu::detail::send_frame(fd, gpu::detail::tag_values, gpu::detail::encode_values({static_cast<double>(life)}));
  }
}

__attribute__((constructor)) void become_planned_worker_if_asked() {
  const char* v = std::getenv(planned_worker_kind.variable);
  if (!v) return;
  const auto parsed = gpu::detail::parse_worker_env(v);
  ::unsetenv(planned_worker_kind.variable);
  if (parsed) planned_worker(parsed->first, parsed->second);
}

} // namespace

TEST_CASE("a job for a worker that ended while idle goes to a new worker, not on the candidate's record",
          "[cuda][isolation]") {
  // An idle worker the OOM killer chose is still `alive()` to the pool (not yet collected) until the
  // next job cannot be sent to it; that job never ran, so it must not be recorded as its candidate's crash.
  using ending = cotune::detail::isolated_result::ending;
  cotune_test::temp_dir dir("pool");
  ::setenv("COTUNE_TEST_POOL_DIR", dir.string().c_str(), 1);
  // Device 0: a worker no job can be sent to, which does not end by itself (the pool kills it after
  // its grace), then one that serves. Device 1: two that cannot be sent anything and exit, then one
  // that serves.
  ::setenv("COTUNE_TEST_POOL_PLANS", "rs;RRs", 1);
  auto& pool = gpu::detail::isolation_pool::of<planned_worker_kind>();
  const gpu::detail::worker_job job{};
  (void)pool.take_warnings();
  const auto replaced = pool.replaced();

  const auto on_second = pool.run(0, job);
  CHECK(on_second.end == ending::returned);
  CHECK(on_second.values == std::vector<double>{1});
  CHECK(pool.replaced() == replaced + 1);
  auto warnings = pool.take_warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("test isolation worker for device 0 could no longer be sent a job") &&
                              Catch::Contains("still running 2000 ms after its channel closed, so killed"));

  const auto after_two = pool.run(1, job);
  CHECK(after_two.end == ending::crashed);
  CHECK_THAT(after_two.detail, Catch::Contains("two test isolation workers in a row could not be sent it") &&
                                   Catch::Contains("exited with status 0; then pid"));
  CHECK(pool.replaced() == replaced + 3);
  CHECK(pool.take_warnings().size() == 2);
  const auto on_third = pool.run(1, job);
  CHECK(on_third.end == ending::returned);
  CHECK(on_third.values == std::vector<double>{2});
  // The workers that serve still do.
  CHECK(pool.run(0, job).values == std::vector<double>{1});
  CHECK(pool.replaced() == replaced + 3);
  ::unsetenv("COTUNE_TEST_POOL_PLANS");
}

TEST_CASE("the worker variable names a descriptor and a device", "[cuda][isolation]") {
  CHECK(gpu::detail::parse_worker_env("3:0") == std::pair<int, int>{3, 0});
  CHECK(gpu::detail::parse_worker_env("12:7") == std::pair<int, int>{12, 7});
  for (const char* bad : {"", "3", "3:", ":0", "a:0", "3:-1", "3:0:1", "99999999999:0"})
    CHECK(!gpu::detail::parse_worker_env(bad));
}

TEST_CASE("an isolation worker starts from this executable before main and answers", "[cuda][isolation]") {
  // A fresh process, exec'd from /proc/self/exe: this test program becomes a worker before Catch2's
  // main. Without a GPU it says why it cannot serve; with one it reports ready.
  gpu::detail::isolation_worker w(cuda::detail::isolation_worker_kind, 0);
  const auto why = w.ready();
  if (cuda::devices().empty()) {
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("CUDA device 0 in the worker"));
    CHECK(!w.alive());
  } else {
    CHECK(!why);
    CHECK(w.alive());
    CHECK(w.start_ms() > 0);
  }
}

TEST_CASE("isolated endings become the candidate's status with its reason", "[cuda][isolation]") {
  using cotune::detail::isolated_result;
  using ending = isolated_result::ending;
  auto make = [](ending e, std::string detail, char kind = 'e') {
    isolated_result r;
    r.end = e;
    r.detail = std::move(detail);
    r.kind = kind;
    r.values = {1, 2, 3};
    return r;
  };
  CHECK(cotune::detail::isolated_values(make(ending::returned, ""), "k", "A: 1", "") == std::vector<double>{1, 2, 3});
  CHECK_THROWS_AS(cotune::detail::isolated_values(make(ending::crashed, "it failed with CUDA_ERROR_ILLEGAL_ADDRESS"),
                                                  "k", "A: 1", ""),
                  cotune::candidate_crashed);
  CHECK_THROWS_WITH(cotune::detail::isolated_values(make(ending::crashed, "killed by signal 11"), "k", "A: 1",
                                                    "its isolated benchmark process was "),
                    Catch::Contains("kernel 'k' with config {A: 1}: its isolated benchmark process was killed by "
                                    "signal 11; this candidate is lost"));
  CHECK_THROWS_AS(cotune::detail::isolated_values(make(ending::hung, "still running"), "k", "A: 1", ""),
                  cotune::candidate_hung);
  CHECK_THROWS_AS(cotune::detail::isolated_values(make(ending::threw, "bad launch", 'l'), "k", "A: 1", ""),
                  cotune::launch_error);
  CHECK_THROWS_AS(cotune::detail::isolated_values(make(ending::threw, "wrong result: k"), "k", "A: 1", ""),
                  cotune::wrong_result);
  try {
    (void)cotune::detail::isolated_values(make(ending::threw, "plain"), "k", "A: 1", "");
    FAIL("expected an error");
  } catch (const cotune::launch_error&) {
    FAIL("a plain error is not a launch error");
  } catch (const cotune::error& e) {
    CHECK(std::string(e.what()) == "plain");
  }
}

namespace {
using iso_signature = void(cuda::device_span<const float>, cuda::device_span<float>, int);
using iso_options = cotune::tune_options<cuda::device_span<const float>, cuda::device_span<float>, int>;
} // namespace

TEST_CASE("a CUDA tuning with hooks that only its process can run is not sent to a worker", "[cuda][isolation]") {
  std::string warning;
  iso_options plain{.arg_names = {"x", "out", "n"}};
  const std::vector<config> configs{config({{"MODE", 0}})};
  CHECK(cotune::detail::isolation_applies<cuda::cuda_backend>(true, "on", plain, configs, warning));
  CHECK(warning.empty());
  CHECK(!cotune::detail::isolation_applies<cuda::cuda_backend>(false, "auto", plain, configs, warning));
  iso_options hooked{.arg_names = {"x", "out", "n"}, .pre_hook = [](auto&...) {}};
  CHECK(!cotune::detail::isolation_applies<cuda::cuda_backend>(true, "on", hooked, configs, warning));
  CHECK_THAT(warning, Catch::Contains("pre_hook") && Catch::Contains("measured in-process"));
  // A forked copy runs hooks itself: the host backend isolates them.
  std::string none;
  cotune::tune_options<cotune::host_span<float>> host{.arg_names = {"x"}, .pre_hook = [](auto&) {}};
  CHECK(cotune::detail::isolation_applies<cotune::host_backend>(true, "on", host, configs, none));
  static_assert(cotune::detail::worker_isolation<cuda::cuda_backend>() &&
                !cotune::detail::fork_isolation<cuda::cuda_backend>());
  // An isolated tuning starts the device's worker before its first measurement needs it.
  static_assert(cotune::detail::PrestartsIsolation<cuda::cuda_backend> &&
                !cotune::detail::PrestartsIsolation<cotune::host_backend>);
  static_assert(!cotune::detail::worker_isolation<cotune::host_backend>());
}

namespace {

const kernel_source faulty = cotune_test::fault_kernel("iso_faulty", "__trap");

const kernel_source check_kernel{.name = "iso_check",
                                 .code = R"(
extern "C" __global__ void iso_check(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3.0f;
}
)",
                                 .entry = "iso_check"};

config mode(int m, int tag) { return config({{"MODE", m}, {"TAG", tag}}, cotune::launch_options{.num_warps = 4}); }

iso_options options(int n_checked) {
  return {.arg_names = {"x", "out", "n"},
          .key = {"n"},
          .reset_to_zero = {"out"},
          .grid = [](const config&, const cuda::device_span<const float>&, const cuda::device_span<float>&,
                     const int& n) { return cotune::launch_grid{.x = static_cast<unsigned>((n + 127) / 128)}; },
          .cache_results = false,
          .bench = cotune::bench_options{.warmup_ms = 2.0, .rep_ms = 10.0},
          .verify = [n_checked](const config&, const cuda::device_span<const float>& x, const cuda::device_span<float>& out,
                                const int&) -> std::optional<std::string> {
            const auto xs = x.to_vector(), got = out.to_vector();
            for (int i = 0; i < n_checked; ++i)
              if (got[std::size_t(i)] != 2.0f * xs[std::size_t(i)]) return "out[" + std::to_string(i) + "] is wrong";
            return std::nullopt;
          }};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

} // namespace

TEST_CASE("with no knob set, a candidate that writes nothing fails verification, in the worker and in-process",
          "[cuda][isolation][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = 1 << 12;
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[std::size_t(i)] = static_cast<float>(i % 97);
  for (const char* isolate : {"on", "off"}) {
    INFO("COTUNE_ISOLATE=" << isolate);
    auto mode_knob = cotune::knobs().autotuning.isolate.scoped(isolate);
    cuda::device_buffer<float> x(d, xs), out(d, std::size_t(n));
    auto opts = options(n);
    opts.reset_to_zero.clear(); // out is poisoned, not zeroed, before the verification run
    // The right answer is already in `out`: without poisoning, MODE 4 (writes nothing) would pass.
    std::vector<float> right(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) right[i] = 2.0f * xs[i];
    out.copy_from(right);
    cotune::autotuner<iso_signature, cuda::cuda_backend> tuner{cotune_test::fault_kernel(fmt::format("iso_nothing_{}", isolate), "__trap"),
                                                               {mode(0, 0), mode(4, 0)}, opts};
    const auto& result = tuner.tune_now(x, out, n);
    CHECK(result.candidates[0].status == cotune::candidate_status::ok);
    CHECK(result.candidates[1].status == cotune::candidate_status::wrong_result);
    CHECK_THAT(result.candidates[1].reason, Catch::Contains("out[0] is wrong"));
    CHECK(result.winner == 0);
  }
}

TEST_CASE("with no knob set, an illegal address, a trap and an endless kernel each cost one candidate",
          "[cuda][isolation][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
    return;
  }
  REQUIRE(cotune::knobs().autotuning.isolate.get() == "on"); // the default: run without COTUNE_ISOLATE
  auto timeout = cotune::knobs().bench.timeout_ms.scoped(1500);
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = 1 << 16;
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[std::size_t(i)] = static_cast<float>(i % 97);
  cuda::device_buffer<float> x(d, xs), out(d, std::size_t(n));
  const std::size_t replaced_before = cuda::detail::isolation_workers().replaced();

  const std::vector<config> configs{mode(0, 0), mode(1, 0), mode(2, 0), mode(3, 0), mode(0, 1)};
  cotune::autotuner<iso_signature, cuda::cuda_backend> tuner{faulty, configs, options(n)};
  const auto started = std::chrono::steady_clock::now();
  const auto& result = tuner.tune_now(x, out, n);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const auto& c : result.candidates) WARN(c.cfg.text() << ": " << to_string(c.status) << ": " << c.reason);
  using cotune::candidate_status;
  CHECK(result.candidates[0].status == candidate_status::ok);
  CHECK(result.candidates[1].status == candidate_status::crashed);
  CHECK_THAT(result.candidates[1].reason, Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
  CHECK(result.candidates[2].status == candidate_status::crashed);
  CHECK_THAT(result.candidates[2].reason, Catch::Contains("CUDA_ERROR"));
  CHECK(result.candidates[3].status == candidate_status::hung);
  CHECK_THAT(result.candidates[3].reason, Catch::Contains("COTUNE_BENCH_TIMEOUT_MS"));
  CHECK(result.candidates[4].status == candidate_status::ok);
  CHECK((result.winner == 0 || result.winner == 4));
  const auto lost = std::count_if(result.candidates.begin(), result.candidates.end(),
                                  [](const auto& c) { return c.status != candidate_status::ok; });
  CHECK(lost == 3);
  CHECK(cuda::detail::isolation_workers().replaced() - replaced_before == 3);

  // The parent's context is untouched: its own kernel runs, then the winner.
  cuda::cuda_backend backend;
  const config c1({}, cotune::launch_options{.num_warps = 4});
  auto check = backend.load(backend.compile(check_kernel, c1, d), check_kernel, c1, d);
  cuda::device_span<float> o = out;
  int count = n;
  backend.launch(check, cotune::launch_grid{.x = static_cast<unsigned>((n + 127) / 128)}, o, count);
  backend.synchronize(d);
  CHECK(out.to_vector() == std::vector<float>(std::size_t(n), 3.0f));
  tuner(x, out, n);
  backend.synchronize(d);
  const auto got = out.to_vector();
  bool right = true;
  for (int i = 0; i < n; ++i) right = right && got[std::size_t(i)] == 2.0f * xs[std::size_t(i)];
  CHECK(right);
  std::printf("FIGURE {\"figure\": \"isolation_configs_lost_per_fault\", \"faults\": 3, \"configs_lost\": %ld, "
              "\"per_fault\": %.2f, \"tuning_wall_s\": %.3f, \"timeout_ms\": 1500}\n",
              static_cast<long>(lost), static_cast<double>(lost) / 3.0, wall_s);
}

TEST_CASE("an argument the isolation worker cannot map is refused there, so it is measured in-process",
          "[cuda][isolation][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
    return;
  }
  const auto& d = devices.front();
  cuda::cuda_backend backend;
  const config c1({}, cotune::launch_options{.num_warps = 4});
  const auto bin = backend.compile(check_kernel, c1, d);
  gpu::detail::worker_job job;
  job.timed = false;
  job.image = bin.image;
  job.symbol = bin.lowered_name;
  job.block = {128, 1, 1};
  gpu::detail::worker_param forged{.device = true};
  forged.handle.fill('\x5a'); // no process exported this handle
  const int zero = 0;
  const gpu::detail::worker_param n{.bytes = std::string(reinterpret_cast<const char*>(&zero), sizeof zero)};
  job.params = {forged, n};
  auto& pool = cuda::detail::isolation_workers();
  (void)pool.take_warnings();
  const auto refused = pool.run(d.ordinal, job);
  INFO(refused.detail);
  CHECK(refused.end == cotune::detail::isolated_result::ending::refused);
  CHECK_THAT(refused.detail, Catch::Contains("cannot map an argument's memory") && Catch::Contains("in-process"));
  const auto warnings = pool.take_warnings();
  CHECK(warnings.size() == 1);
  // The worker goes on: the same kernel with a null pointer (n = 0, nothing written) runs there.
  job.params = {{.bytes = std::string(sizeof(CUdeviceptr), '\0')}, n};
  CHECK(pool.run(d.ordinal, job).end == cotune::detail::isolated_result::ending::returned);
}

TEST_CASE("isolation figures: worker respawn time and the overhead on a small tuning", "[cuda][isolation][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
    return;
  }
  const auto& d = devices.front();
  std::vector<double> starts;
  for (int i = 0; i < 12; ++i) {
    gpu::detail::isolation_worker w(cuda::detail::isolation_worker_kind, d.ordinal);
    REQUIRE(!w.ready());
    starts.push_back(w.start_ms());
  }
  std::printf("FIGURE {\"figure\": \"isolation_worker_respawn_ms\", \"samples\": %zu, \"p50\": %.1f, \"p99\": %.1f}\n",
              starts.size(), percentile(starts, 0.5), percentile(starts, 0.99));

  cotune_test::private_cache cache;
  const int n = 1 << 20;
  std::vector<float> xs(static_cast<std::size_t>(n), 1.0f);
  cuda::device_buffer<float> x(d, xs), out(d, std::size_t(n));
  std::vector<config> good;
  for (int t = 0; t < 8; ++t) good.push_back(mode(0, t));
  auto tune_ms = [&](const char* isolate) {
    auto k = cotune::knobs().autotuning.isolate.scoped(isolate);
    cotune::autotuner<iso_signature, cuda::cuda_backend> tuner{faulty, good, options(16)};
    const auto& r = tuner.tune_now(x, out, n);
    CHECK(r.candidates[r.winner].status == cotune::candidate_status::ok);
    return r.wall_ms;
  };
  (void)tune_ms("on"); // a warm worker and compiled binaries, so that both sides measure only the tuning
  std::vector<double> off, on;
  for (int round = 0; round < 3; ++round) {
    off.push_back(tune_ms("off"));
    on.push_back(tune_ms("on"));
  }
  const double off_ms = percentile(off, 0.5), on_ms = percentile(on, 0.5);
  std::printf("FIGURE {\"figure\": \"isolation_overhead_small_tuning\", \"configs\": 8, \"off_ms\": %.1f, "
              "\"on_ms\": %.1f, \"overhead\": %.3f}\n",
              off_ms, on_ms, off_ms > 0 ? on_ms / off_ms - 1 : 0.0);
}
