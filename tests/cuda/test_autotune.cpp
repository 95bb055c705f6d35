// Tests of `cotune::autotuner` over the CUDA backend (cotune/cuda/cuda.hpp). The defaults, the
// grids and the compilation of the examples' kernels run everywhere (NVRTC needs no GPU);
// tuning, failures, the warm start and several GPUs are [gpu] tests that skip without a device.
// The hidden case "warm start child" is the second process of the warm-start test.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/process.hpp>

// The examples' kernels, configs and tuner options, without their main().
#define COTUNE_EXAMPLE_NO_MAIN
#include "../../examples/03_tune_cuda_vector.cpp"
#include "../../examples/04_tune_cuda_gemm.cpp"
#include "../../examples/05_tune_cuda_conv2d.cpp"

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

using cotune::config;
using cotune::kernel_source;
using cotune::launch_options;

namespace {

std::string skip_reason() { return "skipped: no CUDA device here (" + cuda::availability().message + ")"; }

/// A hand-made description of an H100/H200-class device: enough to compile for sm_90 without a GPU.
cuda::device sm90() { return cuda::device{.ordinal = 0, .cc = {9, 0}, .name = "hand-made sm_90"}; }

/// Small budgets: the tests check choices and outputs, never timings.
cotune::bench_options quick_bench() { return {.warmup_ms = 2.0, .rep_ms = 10.0}; }

/// x, y with small integers (exact sums) and the expected x + y.
struct vector_data {
  std::vector<float> x, y, expected;
  explicit vector_data(int n) : x(std::size_t(n)), y(std::size_t(n)), expected(std::size_t(n)) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(i % 1000);
      y[i] = static_cast<float>(2 * (i % 13));
      expected[i] = x[i] + y[i];
    }
  }
};

/// The vector kernel without __launch_bounds__ (which the compiler refuses above 1024 threads), so
/// that a 2048-thread candidate compiles and is caught by the resource check at load; a BROKEN
/// candidate does not compile.
const char* plain_vector_add_code = R"(
#if BROKEN
this line is not C++;
#endif
extern "C" __global__ void plain_vector_add(const float* x, const float* y, float* out, int n) {
  const long long base = (long long)blockIdx.x * BLOCK;
  for (int k = threadIdx.x; k < BLOCK; k += blockDim.x) {
    const long long i = base + k;
    if (i < n) out[i] = x[i] + y[i];
  }
}
)";

kernel_source plain_vector_add(const std::string& name) {
  std::string code = plain_vector_add_code;
  code.replace(code.find("plain_vector_add("), 16, name);
  return {.name = name, .code = code, .entry = name};
}

config vector_config(int block, launch_options launch, int broken = 0) {
  return config({{"BLOCK", block}, {"BROKEN", broken}}, launch);
}

// Each thread runs COST x iters dependent multiply-adds: candidates differ in speed by their COST
// ratio (4x between neighbours below), so any two devices agree on the winner. The result does not
// depend on COST, so every candidate's output can be checked.
const kernel_source busy{.name = "busy",
                         .code = R"(
extern "C" __global__ void busy(float* out, int n, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = (float)(i & 1023) * 1e-4f;
  for (int k = 0; k < COST * iters; ++k) x = x * 0.999f + 0.001f;
  if (i < n) out[i] = (float)i + (x > 1e30f ? 1.0f : 0.0f);
}
)",
                         .entry = "busy"};

/// The COST order of the candidates; the fastest (COST 1) is third.
std::vector<config> busy_configs() {
  std::vector<config> out;
  for (int cost : {16, 64, 1, 256, 4}) out.emplace_back(config({{"COST", cost}}, launch_options{.num_warps = 8}));
  return out;
}

using busy_tuner = cotune::autotuner<void(cuda::device_span<float>, int, int), cuda::cuda_backend>;

busy_tuner::options busy_options() {
  return {.arg_names = {"out", "n", "iters"},
          .key = {"n"},
          .grid = [](const config& c, const cuda::device_span<float>&, const int& n,
                     const int&) { return cotune::grid(c, cotune::cdiv(n, c.launch().threads())); },
          .cache_results = false,
          .bench = quick_bench()};
}

// About 50 us per run for COST 1 on an H200 (2.5e4 dependent FMAs at ~2 ns each).
constexpr int busy_iters = 25000;

bool is_iota(const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<float>(i)) return false;
  return true;
}

std::string self_path() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

} // namespace

TEST_CASE("CUDA tuners measure with the CUDA benchmarker by default", "[cuda][autotune]") {
  static_assert(std::is_same_v<cotune::default_benchmarker_t<cuda::cuda_backend>, cuda::cuda_benchmarker>);
  static_assert(std::is_same_v<cotune::default_benchmarker_t<cuda::cuda_backend>,
                               cuda::cuda_benchmarker>);
  static_assert(std::is_same_v<cotune::default_benchmarker_t<cotune::host_backend>, cotune::host_benchmarker>);
  static_assert(std::is_same_v<example04::gemm_tuner,
                               cotune::autotuner<example04::gemm_signature, cuda::cuda_backend, cuda::cuda_benchmarker>>);
  SUCCEED();
}

TEST_CASE("the examples' grids divide sizes into blocks of a config's parameters", "[cuda][autotune]") {
  const config c({{"BLOCK", 256}, {"BLOCK_M", 128}, {"BLOCK_N", 64}, {"MODE", "fast"}});
  using cotune::p;
  CHECK(cotune::grid(c, cdiv(1000, p("BLOCK"))) == cotune::launch_grid{.x = 4});
  CHECK(cotune::grid(c, cdiv(1000, p("BLOCK_N")), cdiv(1000, p("BLOCK_M"))).with_shared(4096) ==
        cotune::launch_grid{.x = 16, .y = 8, .shared_bytes = 4096});
  CHECK_THROWS_WITH(cotune::grid(c, cdiv(10, p("MODE"))), Catch::Contains("'MODE'") && Catch::Contains("integer"));
  CHECK_THROWS_AS(cotune::grid(c, cdiv(10, p("NO_SUCH"))), cotune::error);
}

TEST_CASE("the GEMM example prunes to tiles that divide the problem and sizes its shared memory",
          "[cuda][autotune]") {
  const auto configs = example04::gemm_configs();
  REQUIRE(configs.size() == 16);
  const auto opts = example04::gemm_options();
  const example04::A_span a;
  const example04::C_span c;
  CHECK(opts.early_config_prune(configs, a, a, c, 1024, 1024, 1024).size() == 16);
  // 192 = 64 x 3: only 64-row (and 64-column) tiles divide it.
  CHECK(opts.early_config_prune(configs, a, a, c, 192, 1024, 1024).size() == 8);
  CHECK(opts.early_config_prune(configs, a, a, c, 192, 192, 1024).size() == 4);
  for (const auto& cfg : configs) {
    INFO(cfg.text());
    // Within an sm_90 block's opt-in limit (227 KB), so that no candidate is refused on an H200.
    CHECK(example04::gemm_shared_bytes(cfg) <= 227u * 1024u);
  }
  const auto g = opts.grid(configs.back(), a, a, c, 1024, 2048, 512);
  CHECK(g.x == 2048 / 128);
  CHECK(g.y == 1024 / 128);
  CHECK(g.shared_bytes == example04::gemm_shared_bytes(configs.back()));
}

TEST_CASE("every candidate of the examples' kernels compiles for sm_90 without a GPU", "[cuda][autotune]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  std::vector<std::pair<kernel_source, config>> jobs;
  for (const auto& c : example04::gemm_configs()) jobs.emplace_back(example04::gemm_kernel(), c);
  for (const auto& c : example03::vector_add_configs()) jobs.emplace_back(example03::vector_add_kernel(), c);
  for (const auto& c : example05::conv_configs()) jobs.emplace_back(example05::conv_kernel(), c);
  std::vector<std::string> failures(jobs.size());
  std::vector<std::thread> threads;
  const std::size_t workers = std::max(2u, std::thread::hardware_concurrency());
  for (std::size_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (std::size_t i = w; i < jobs.size(); i += workers) {
        try {
          auto bin = backend.compile(jobs[i].first, jobs[i].second, sm90());
          if (bin.image.empty()) failures[i] = "empty image";
        } catch (const std::exception& e) {
          failures[i] = e.what();
        }
      }
    });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(jobs[i].first.name << " {" << jobs[i].second.text() << "}");
    CHECK(failures[i].empty());
    if (!failures[i].empty()) WARN(failures[i].substr(0, 2000));
  }
}

// ---- [gpu] ---------------------------------------------------------------------------------------

TEST_CASE("a tuned vector kernel's output matches a CPU reference", "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = (1 << 20) + 123; // not a multiple of any block: the tail is handled
  vector_data data(n);
  cuda::device_buffer<float> x(d, data.x), y(d, data.y), out(d, std::size_t(n));

  auto opts = example03::vector_add_options();
  opts.cache_results = false;
  opts.bench = quick_bench();
  example03::vector_add_tuner tuner{example03::vector_add_kernel("test_vector_add"), example03::vector_add_configs(),
                                    opts};
  const auto& result = tuner.tune_now(x, y, out, n);
  CHECK_FALSE(result.from_cache);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
    CHECK(c.device == 0);
    CHECK(c.time[0] > 0.0);
  }
  REQUIRE(tuner.best_config(x, y, out, n) != nullptr);
  CHECK(*tuner.best_config(x, y, out, n) == result.best());

  out.zero();
  tuner(x, y, out, n);
  CHECK(out.to_vector() == data.expected);
  // Another size is another key: tuned anew.
  const int m = 4096;
  tuner(x.span().subspan(0, m), y.span().subspan(0, m), out.span().subspan(0, m), m);
  CHECK(tuner.measured_tunings() == 2);
  WARN("vector winner {" << result.best().text() << "} at " << result.candidates[result.winner].time[0] * 1e3
                         << " us for " << n << " floats");
}

TEST_CASE("an over-limit candidate is rejected before launch as out_of_resources and tuning goes on",
          "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = 1 << 20;
  vector_data data(n);
  cuda::device_buffer<float> x(d, data.x), y(d, data.y), out(d, std::size_t(n));

  // Each config's pre-hook counts its runs: a config refused before launch never runs its hook.
  auto runs = std::make_shared<std::map<std::string, int>>();
  auto counted = [&](config c, std::string name) {
    return c.with_pre_hook(name, [runs, name](const cotune::hook_args&) { ++(*runs)[name]; });
  };
  std::vector<config> configs{counted(vector_config(1024, {.num_warps = 4}), "small"),
                              counted(vector_config(2048, {.threads_per_block = 2048}), "over_limit"),
                              counted(vector_config(4096, {.num_warps = 8}), "large")};
  using tuner_t = cotune::autotuner<example03::vector_add_signature, cuda::cuda_backend>;
  tuner_t tuner{plain_vector_add("over_limit_add"), configs,
                {.arg_names = {"x", "y", "out", "n"},
                 .key = {"n"},
                 .grid = [](const config& c, const cuda::device_span<const float>&, const cuda::device_span<const float>&,
                            const cuda::device_span<float>&, const int& n) { return cotune::grid(c, cdiv(n, cotune::p("BLOCK"))); },
                 .cache_results = false,
                 .bench = quick_bench()}};
  const auto& result = tuner.tune_now(x, y, out, n);
  REQUIRE(result.candidates.size() == 3);
  const auto& refused = result.candidates[1];
  INFO(refused.reason);
  CHECK(refused.status == cotune::candidate_status::out_of_resources);
  CHECK_THAT(refused.reason, Catch::Contains("threads per block") && Catch::Contains("required 2048") &&
                                 Catch::Contains(fmt::format("hardware limit {}", d.max_threads_per_block)));
  CHECK(runs->count("over_limit") == 0);
  CHECK(runs->at("small") > 0);
  CHECK(runs->at("large") > 0);
  CHECK(result.candidates[0].status == cotune::candidate_status::ok);
  CHECK(result.candidates[2].status == cotune::candidate_status::ok);
  CHECK(result.winner != 1);

  out.zero();
  tuner(x, y, out, n);
  CHECK(out.to_vector() == data.expected);
}

TEST_CASE("a candidate that fails to compile is skipped and the others are measured", "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int n = 1 << 20;
  vector_data data(n);
  cuda::device_buffer<float> x(d, data.x), y(d, data.y), out(d, std::size_t(n));

  std::vector<config> configs{vector_config(1024, {.num_warps = 4}, 1), vector_config(2048, {.num_warps = 4}),
                              vector_config(4096, {.num_warps = 8})};
  using tuner_t = cotune::autotuner<example03::vector_add_signature, cuda::cuda_backend>;
  std::vector<std::string> failed;
  struct recorder final : cotune::observer {
    std::vector<std::string>* failed;
    explicit recorder(std::vector<std::string>* f) : failed(f) {}
    void on_event(const cotune::tuning_event& e) override {
      if (auto* f = std::get_if<cotune::candidate_failed>(&e)) failed->push_back(f->result->cfg.text());
    }
  };
  tuner_t tuner{plain_vector_add("broken_add"), configs,
                {.arg_names = {"x", "y", "out", "n"},
                 .key = {"n"},
                 .grid = [](const config& c, const cuda::device_span<const float>&, const cuda::device_span<const float>&,
                            const cuda::device_span<float>&, const int& n) { return cotune::grid(c, cdiv(n, cotune::p("BLOCK"))); },
                 .cache_results = false,
                 .bench = quick_bench(),
                 .observers = {std::make_shared<recorder>(&failed)}}};
  const auto& result = tuner.tune_now(x, y, out, n);
  const auto& broken = result.candidates[0];
  INFO(broken.reason);
  CHECK(broken.status == cotune::candidate_status::compile_error);
  CHECK_THAT(broken.reason, Catch::Contains("broken_add") && Catch::Contains("BROKEN: 1"));
  CHECK(failed == std::vector<std::string>{configs[0].text()});
  CHECK(result.candidates[1].status == cotune::candidate_status::ok);
  CHECK(result.candidates[2].status == cotune::candidate_status::ok);
  CHECK(result.winner != 0);

  out.zero();
  tuner(x, y, out, n);
  CHECK(out.to_vector() == data.expected);
}

namespace {
constexpr int warm_n = 1 << 20;
const char* warm_kernel_name = "warm_vector_add";
} // namespace

// The second process of the next test: it tunes the same kernel and key against the cache that the
// parent left (COTUNE_CACHE_DIR) and prints what it did. Hidden: it runs only when asked by name.
TEST_CASE("warm start child", "[.][cuda][autotune][gpu]") {
  if (!std::getenv("COTUNE_TEST_WARM_CHILD")) return;
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("warm-child: no device\n");
    return;
  }
  const auto& d = devices.front();
  vector_data data(warm_n);
  cuda::device_buffer<float> x(d, data.x), y(d, data.y), out(d, std::size_t(warm_n));
  out.zero();
  auto opts = example03::vector_add_options(); // cache_results = true
  opts.bench = quick_bench();
  example03::vector_add_tuner tuner{example03::vector_add_kernel(warm_kernel_name), example03::vector_add_configs(),
                                    opts};
  tuner(x, y, out, warm_n);
  const bool correct = out.to_vector() == data.expected;
  const auto* best = tuner.best_config(x, y, out, warm_n);
  std::printf("warm-child: compilations=%llu measured=%zu cached=%zu correct=%d best={%s}\n",
              static_cast<unsigned long long>(cuda::nvrtc().compilations()), tuner.measured_tunings(),
              tuner.cached_tunings(), correct ? 1 : 0, best ? best->text().c_str() : "none");
  std::fflush(stdout);
}

TEST_CASE("a warm start in a new process compiles nothing and takes the result from the cache",
          "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  vector_data data(warm_n);
  cuda::device_buffer<float> x(d, data.x), y(d, data.y), out(d, std::size_t(warm_n));
  auto opts = example03::vector_add_options();
  opts.bench = quick_bench();
  example03::vector_add_tuner tuner{example03::vector_add_kernel(warm_kernel_name), example03::vector_add_configs(),
                                    opts};
  const auto& cold = tuner.tune_now(x, y, out, warm_n);
  REQUIRE_FALSE(cold.from_cache);

  auto child = cotune::detail::run_process(
      {self_path(), "warm start child"}, std::chrono::seconds(120), {},
      {"COTUNE_CACHE_DIR=" + cache.cache_dir().string(), "COTUNE_TEST_WARM_CHILD=1", "COTUNE_PRINT_AUTOTUNING=0"});
  INFO(child.output);
  REQUIRE(child.exit_code == 0);
  const auto at = child.output.find("warm-child: ");
  REQUIRE(at != std::string::npos);
  const std::string line = child.output.substr(at, child.output.find('\n', at) - at);
  WARN(line);
  CHECK_THAT(line, Catch::Contains("compilations=0 ") && Catch::Contains("measured=0 ") &&
                       Catch::Contains("cached=1 ") && Catch::Contains("correct=1 "));
  CHECK_THAT(line, Catch::Contains("best={" + cold.best().text() + "}"));
}

TEST_CASE("two GPUs split a candidate list and agree with one GPU on the winner", "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.size() < 2 || !cuda::interchangeable(devices[0], devices[1])) {
    WARN((devices.empty() ? skip_reason()
                          : "skipped: this test needs two identical CUDA devices, found " + std::to_string(devices.size())));
    return;
  }
  cotune_test::private_cache cache;
  const int n = 1 << 18;
  std::vector<cuda::device_buffer<float>> outs;
  for (std::size_t i = 0; i < 2; ++i) outs.emplace_back(devices[i], std::size_t(n));

  busy_tuner one{busy, busy_configs(), busy_options()};
  const auto& single = one.tune_now(outs[0], n, busy_iters);

  auto opts = busy_options();
  opts.args_for_device = [&](std::size_t dev, const cuda::device_span<float>&, const int& size, const int& iters) {
    return std::tuple<cuda::device_span<float>, int, int>(outs.at(dev).span(), size, iters);
  };
  busy_tuner two{busy, busy_configs(), opts};
  // Binaries first (cache hits for the tuning), so that candidates become ready together and both
  // devices have work at once.
  for (const auto& r : two.warmup(outs[0], n, busy_iters)) REQUIRE(r.status == cotune::candidate_status::ok);
  const auto& split = two.tune_now(outs[0], n, busy_iters);

  std::set<int> used;
  for (const auto& c : split.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
    used.insert(c.device);
  }
  CHECK(used == std::set<int>{0, 1});
  CHECK(single.winner == 2);
  CHECK(split.winner == single.winner);
  CHECK(split.best() == single.best());
  std::string timings;
  for (const auto& c : split.candidates)
    timings += fmt::format(" COST {} on GPU {}: {:.3f} ms;", c.cfg.at("COST").as_int(), c.device, c.time[0]);
  WARN("split over 2 GPUs:" << timings);

  outs[0].zero();
  two(outs[0], n, busy_iters); // launches on device 0, the launch device
  CHECK(is_iota(outs[0].to_vector()));
}

TEST_CASE("tune_many tunes keys on every device at once", "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const std::size_t count = std::min<std::size_t>(devices.size(), 2);
  std::vector<cuda::device_buffer<float>> outs;
  std::vector<std::unique_ptr<busy_tuner>> tuners;
  std::vector<int> sizes;
  for (std::size_t i = 0; i < 2; ++i) {
    const std::size_t dev = i % count; // with one GPU, both jobs take turns on it
    auto opts = busy_options();
    opts.device = dev;
    sizes.push_back((1 << 17) * int(i + 1));
    outs.emplace_back(devices[dev], std::size_t(sizes.back()));
    tuners.push_back(std::make_unique<busy_tuner>(busy, busy_configs(), opts));
  }
  std::vector<cotune::tuning_task> jobs;
  for (std::size_t i = 0; i < 2; ++i)
    jobs.push_back([&, i] { return tuners[i]->tune(outs[i], sizes[i], busy_iters); });
  const auto outcomes = cotune::tune_many(std::move(jobs));
  REQUIRE(outcomes.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("job " << i);
    REQUIRE(outcomes[i].ok());
    CHECK(outcomes[i].result->winner == 2);
    for (const auto& c : outcomes[i].result->candidates) CHECK(c.device == int(i % count));
    outs[i].zero();
    (*tuners[i])(outs[i], sizes[i], busy_iters);
    CHECK(is_iota(outs[i].to_vector()));
  }
}

// ---- launch geometry, the caller's stream and graphs ------------------------------------------------

namespace {

// Indexes with blockDim (not the macros), so that a block launched in any other shape than the
// config's BLOCK_X x BLOCK_Y leaves cells unvisited or visits them twice: the output shows it.
const kernel_source add_one_2d{.name = "add_one_2d",
                               .code = R"(
extern "C" __global__ void add_one_2d(float* out, int w, int h) {
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  for (int t = 0; t < TILE_X; ++t) {
    const int x = (blockIdx.x * TILE_X + t) * blockDim.x + threadIdx.x;
    if (x < w && y < h) out[(long long)y * w + x] += 1.0f;
  }
}
)",
                               .entry = "add_one_2d"};

std::vector<config> add_one_2d_configs() {
  using cotune::p;
  return cotune::config_space{}
      .axis("BLOCK_X", {16, 32})
      .axis("BLOCK_Y", {4, 8})
      .axis("TILE_X", {1, 2})
      .derive("block_x", p("BLOCK_X"))
      .derive("block_y", p("BLOCK_Y"))
      .build();
}

using add_one_tuner = cotune::autotuner<void(cuda::device_span<float>, int, int), cuda::cuda_backend>;

add_one_tuner::options add_one_options() {
  return {.arg_names = {"out", "w", "h"},
          .key = {"w", "h"},
          .restore_value = {"out"}, // tuning leaves the output as it was
          .grid = [](const config& c, const cuda::device_span<float>&, const int& w, const int& h) {
            using cotune::p;
            return cotune::grid(c, cdiv(w, p("BLOCK_X") * p("TILE_X")), cdiv(h, p("BLOCK_Y")));
          },
          .cache_results = false,
          .bench = quick_bench()};
}

template <class Tuner>
concept has_on = requires(Tuner& t) { t.on({}); };

bool all_equal(const std::vector<float>& v, float expected) {
  return std::all_of(v.begin(), v.end(), [&](float f) { return f == expected; });
}

/// The capture tests' set-up: the first device, its context made current on this thread, and a
/// non-blocking stream of the caller's (destroyed by the test). Empty, after the skip message, without a device.
struct capture_device {
  cuda::device device;
  const cuda::driver_api* api = nullptr;
  CUstream stream = nullptr;
};

std::optional<capture_device> capture_device_or_skip() {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return std::nullopt;
  }
  const auto& ctx = cuda::driver().context(devices.front().ordinal);
  ctx.make_current();
  capture_device setup{devices.front(), &ctx.api()};
  REQUIRE(setup.api->stream_create(&setup.stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  return setup;
}

} // namespace

TEST_CASE("a tuner takes the caller's stream only over a backend that launches on streams", "[cuda][autotune]") {
  static_assert(has_on<add_one_tuner>);
  static_assert(!has_on<cotune::autotuner<void(cotune::host_span<float>, int), cotune::host_backend>>);
  static_assert(std::is_same_v<add_one_tuner::stream_call::stream_type, CUstream>);
  static_assert(std::is_trivially_copyable_v<add_one_tuner::stream_call>); // no allocation, no lock
  // The 2-D block comes from derived launch options, and reaches the kernel as macros.
  const auto configs = add_one_2d_configs();
  REQUIRE(configs.size() == 8);
  const auto opts = cuda::cuda_backend{}.options_for(add_one_2d, configs.back(), sm90());
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_BLOCK_X=32") != opts.end());
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_BLOCK_Y=8") != opts.end());
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_BLOCK_Z=1") != opts.end());
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_THREADS_PER_BLOCK=256") != opts.end());
}

TEST_CASE("a 2-D kernel with derived blocks and expression grids is tuned and correct", "[cuda][autotune][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int w = 1000, h = 301; // no block or tile divides them: the edges are handled
  cuda::device_buffer<float> out(d, std::size_t(w) * h);
  out.zero();
  add_one_tuner tuner{add_one_2d, add_one_2d_configs(), add_one_options()};
  tuner(out, w, h);
  const auto& result = tuner.tune_now(out, w, h);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
  }
  CHECK(all_equal(out.to_vector(), 1.0f)); // each cell once: the launch used the config's 2-D block
}

TEST_CASE("a tuned call on the caller's stream is captured into a CUDA graph and replayed",
          "[cuda][autotune][gpu][graph]") {
  const auto setup = capture_device_or_skip();
  if (!setup) return;
  cotune_test::private_cache cache;
  const auto& d = setup->device;
  const auto& api = *setup->api;
  CUstream stream = setup->stream;
  const int w = 777, h = 129;
  cuda::device_buffer<float> out(d, std::size_t(w) * h);
  out.zero();

  add_one_tuner tuner{add_one_2d, add_one_2d_configs(), add_one_options()};
  (void)tuner.tune_now(out, w, h); // tuned before the capture, as a capture requires
  const cotune::config* best = tuner.best_config(out, w, h);
  REQUIRE(best != nullptr);
  cuda::cuda_backend{}.synchronize(d);

  // The caller's own work and the tuned call on one stream, in order: out = 1 after the first call.
  tuner.on(stream)(out, w, h);
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(all_equal(out.to_vector(), 1.0f));

  CUgraph graph = nullptr;
  REQUIRE(api.stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuda::cuda_backend{}.is_capturing(stream));
  tuner.on(stream)(out, w, h);
  REQUIRE(api.stream_end_capture(stream, &graph) == CUDA_SUCCESS);
  CHECK_FALSE(cuda::cuda_backend{}.is_capturing(stream));
  CUgraphExec exec = nullptr;
  REQUIRE(api.graph_instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  for (int i = 0; i < 100; ++i) REQUIRE(api.graph_launch(exec, stream) == CUDA_SUCCESS);
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(all_equal(out.to_vector(), 101.0f)); // 1 before the capture + 100 replays, none during it
  CHECK(tuner.measured_tunings() == 1);
  CHECK(*tuner.best_config(out, w, h) == *best);
  (void)api.graph_exec_destroy(exec);
  (void)api.graph_destroy(graph);
  (void)api.stream_destroy(stream);
}

TEST_CASE("a first call for an untuned key inside a capture is an error that says to tune first",
          "[cuda][autotune][gpu][graph]") {
  const auto setup = capture_device_or_skip();
  if (!setup) return;
  cotune_test::private_cache cache;
  const auto& d = setup->device;
  const auto& api = *setup->api;
  CUstream stream = setup->stream;
  const int w = 64, h = 64;
  cuda::device_buffer<float> out(d, std::size_t(w) * h);
  out.zero();
  cuda::cuda_backend{}.synchronize(d);
  add_one_tuner tuner{add_one_2d, add_one_2d_configs(), add_one_options()};

  REQUIRE(api.stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK_THROWS_WITH(tuner.on(stream)(out, w, h),
                    Catch::Contains("not tuned yet") && Catch::Contains("being captured") &&
                        Catch::Contains("Tune the key before capturing") && Catch::Contains("tune_now"));
  CUgraph graph = nullptr;
  CHECK(api.stream_end_capture(stream, &graph) == CUDA_SUCCESS); // the capture is intact
  CHECK(tuner.measured_tunings() == 0);
  CHECK(tuner.best_config(out, w, h) == nullptr);
  if (graph) (void)api.graph_destroy(graph);

  // Outside the capture the same call tunes, then launches on the caller's stream.
  tuner.on(stream)(out, w, h);
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(tuner.measured_tunings() == 1);
  CHECK(all_equal(out.to_vector(), 1.0f));
  (void)api.stream_destroy(stream);
}

TEST_CASE("with first calls served, a call inside a capture launches the stand-in into the graph and the key "
          "tunes in the background", "[cuda][autotune][gpu][graph][serving]") {
  const auto setup = capture_device_or_skip();
  if (!setup) return;
  cotune_test::private_cache cache;
  const auto& d = setup->device;
  const auto& api = *setup->api;
  CUstream stream = setup->stream;
  const int w = 300, h = 70;
  cuda::device_buffer<float> out(d, std::size_t(w) * h), scratch(d, std::size_t(w) * h);
  out.zero();
  scratch.zero();
  cuda::cuda_backend{}.synchronize(d);
  auto opts = add_one_options();
  opts.first_call = cotune::first_call_mode::serve;
  // The background tuning measures on its own buffer: `out` belongs to the graph.
  const cuda::device_span<float> tuning_out = scratch;
  opts.tuning_args = [tuning_out](const cuda::device_span<float>&, const int& width, const int& height) {
    return std::tuple<cuda::device_span<float>, int, int>(tuning_out, width, height);
  };
  add_one_tuner tuner{add_one_2d, add_one_2d_configs(), opts};

  // Thread-local capture: a global one would forbid the tuning's allocations on cotune's threads.
  REQUIRE(api.stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
  tuner.on(stream)(out, w, h); // the stand-in, captured; no tuning inside the capture
  CUgraph graph = nullptr;
  REQUIRE(api.stream_end_capture(stream, &graph) == CUDA_SUCCESS);
  REQUIRE(graph != nullptr);
  const cotune::config* stand_in = tuner.serving_config(out, w, h);
  REQUIRE(stand_in != nullptr);
  CUgraphExec exec = nullptr;
  REQUIRE(api.graph_instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  for (int i = 0; i < 10; ++i) REQUIRE(api.graph_launch(exec, stream) == CUDA_SUCCESS); // while it tunes
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(all_equal(out.to_vector(), 10.0f)); // 10 replays of the stand-in, nothing during the capture

  tuner.wait_tuned();
  CHECK(tuner.measured_tunings() == 1);
  const cotune::config* best = tuner.best_config(out, w, h);
  REQUIRE(best != nullptr);
  CHECK(tuner.serving_config(out, w, h) == best);
  tuner.on(stream)(out, w, h); // the winner now
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(all_equal(out.to_vector(), 11.0f));
  (void)api.graph_exec_destroy(exec);
  (void)api.graph_destroy(graph);
  (void)api.stream_destroy(stream);
}

// ---- module set-up: on_load and __constant__ memory ---------------------------------------------------

static_assert(cotune::FindsModuleGlobals<cuda::cuda_backend>);

TEST_CASE("the convolution example's candidates are 2-D blocks over an expression grid, 48 of them",
          "[cuda][autotune][module]") {
  const auto configs = example05::conv_configs();
  REQUIRE(configs.size() == 48);
  const std::vector<float> filter = example05::make_filter();
  REQUIRE(filter.size() == std::size_t(example05::filter_width * example05::filter_width));
  const auto opts = example05::conv_options(filter);
  REQUIRE(opts.on_load);
  for (const auto& c : configs) {
    const auto block = c.launch().block_shape(32);
    CHECK(block.x == cotune::eval(cotune::p("BLOCK_X"), c));
    CHECK(block.y == cotune::eval(cotune::p("BLOCK_Y"), c));
    const auto g = opts.grid(c, {}, {}, 4096, 100);
    CHECK(g.x == unsigned(cotune::eval(cdiv(4096, cotune::p("BLOCK_X") * cotune::p("TILE_X")), c)));
    CHECK(g.y == unsigned(cotune::eval(cdiv(100, cotune::p("BLOCK_Y") * cotune::p("TILE_Y")), c)));
  }
  // The reference convolves with zeros outside: a centred impulse gives the filter back.
  const int w = 9, h = 9;
  std::vector<float> impulse(std::size_t(w * h), 0.0f);
  impulse[std::size_t(4 * w + 4)] = 1.0f;
  const auto ref = example05::conv_reference(impulse, filter, w, h);
  CHECK(ref[std::size_t(4 * w + 4)] == filter[std::size_t(3 * example05::filter_width + 3)]);
  CHECK(ref[0] == 0.0f);
}

TEST_CASE("on_load writes a __constant__ filter into every candidate, and into the winner after a warm start",
          "[cuda][autotune][gpu][module]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto& d = devices.front();
  const int w = 509, h = 301; // no block or tile divides them: the edges and halos are checked
  const auto filter = example05::make_filter();
  const auto image = example05::make_image(w, h, 11);
  const auto ref = example05::conv_reference(image, filter, w, h);
  cuda::device_buffer<float> in(d, image), out(d, image.size());
  const std::vector<float> poison(image.size(), -1.0f);
  std::atomic<int> loads{0};
  auto options = [&] {
    auto o = example05::conv_options(filter);
    auto write_filter = o.on_load;
    o.on_load = [&loads, write_filter](const cotune::module_view& m, const example05::image_in& a,
                                       const example05::image_out& b, const int& x, const int& y) {
      ++loads;
      write_filter(m, a, b, x, y);
    };
    o.bench = quick_bench();
    // Each candidate's output is checked before it is timed: one whose filter was not written is rejected.
    o.verify = [&](const config&, const example05::image_in&, const example05::image_out& o2, const int&,
                   const int&) -> std::optional<std::string> {
      const double e = example05::max_abs_error(o2.to_vector(), ref);
      if (e <= example05::tolerance) return std::nullopt;
      return "max abs error " + std::to_string(e);
    };
    return o;
  };
  const auto kernel = example05::conv_kernel("conv2d_on_load_test");
  // 12 candidates (both shared-memory variants among them) keep the test short.
  std::vector<config> configs;
  for (const auto& c : example05::conv_configs())
    if (cotune::eval(cotune::p("BLOCK_Y"), c) == 8) configs.push_back(c);
  REQUIRE(configs.size() == 16);
  configs.resize(12);

  example05::conv_tuner cold{kernel, configs, options()};
  out.copy_from(poison);
  cold(in, out, w, h);
  const auto& result = cold.tune_now(in, out, w, h);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << c.reason);
    CHECK(c.status == cotune::candidate_status::ok);
  }
  CHECK(loads >= int(configs.size()));
  CHECK(example05::max_abs_error(out.to_vector(), ref) <= example05::tolerance);

  // A second tuner over the same cache: the result is a cache hit, only the winner is loaded, and
  // on_load runs on it (its module's __constant__ memory starts zeroed: without the hook it computes 0).
  loads = 0;
  example05::conv_tuner warm{kernel, configs, options()};
  out.copy_from(poison);
  warm(in, out, w, h);
  CHECK(warm.cached_tunings() == 1);
  CHECK(warm.measured_tunings() == 0);
  CHECK(loads == 1);
  CHECK(example05::max_abs_error(out.to_vector(), ref) <= example05::tolerance);
  CHECK(*warm.best_config(in, out, w, h) == result.best());
}

#ifdef COTUNE_TEST_PRECOMPILED_FILE
namespace {
/// Whether this process has loaded NVRTC (CUDA 13's soname, or any other a COTUNE_LIBNVRTC_PATH names).
bool nvrtc_loaded() {
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {
      ::dlclose(h);
      return true;
    }
  return false;
}
} // namespace

TEST_CASE("a tuner with COTUNE_PRECOMPILED=only tunes from the precompiled file and never loads NVRTC",
          "[cuda][autotune][precompiled][gpu]") {
  const auto devices = cuda::devices();
  if (devices.empty()) {
    WARN(skip_reason());
    return;
  }
  // CTest runs each test case in a process of its own; a whole-program run may have loaded NVRTC before.
  const bool loaded_before = nvrtc_loaded();
  cotune_test::private_cache cache;
  const auto file = cotune::knobs().runtime.precompiled_file.scoped(COTUNE_TEST_PRECOMPILED_FILE);
  const auto mode = cotune::knobs().runtime.precompiled.scoped("only");
  const auto code = cotune::detail::read_file(cotune_test::source_file("tests/cuda/data/precompiled_scale.cu"));
  REQUIRE(code);
  const kernel_source k{.name = "scale_add", .code = *code, .entry = "scale_add"};
  std::vector<config> configs;
  for (int items : {1, 2, 4, 8}) configs.emplace_back(config({{"ITEMS", items}}, launch_options{.num_warps = 2}));

  using tuner_t = cotune::autotuner<void(cuda::device_span<float>, cuda::device_span<const float>, float, int),
                                    cuda::cuda_backend>;
  tuner_t tuner{k, configs,
                tuner_t::options{.arg_names = {"y", "x", "a", "n"},
                                 .key = {"n"},
                                 .restore_value = {"y"},
                                 .grid = [](const config& c, const auto&, const auto&, const float&, const int& n) {
                                   return cotune::grid(c, cotune::cdiv(n, 64 * cotune::p("ITEMS")));
                                 },
                                 .cache_results = false,
                                 .bench = quick_bench()}};
  const auto& d = devices.front();
  const int n = 100000;
  std::vector<float> x(n), y(n), expected(n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 100);
    y[i] = static_cast<float>(i % 7);
    expected[i] = 2.0f * x[i] + y[i];
  }
  cuda::device_buffer<float> dx(d, x), dy(d, y);
  cuda::device_span<float> sy = dy;
  cuda::device_span<const float> sx = dx;
  float a = 2.0f;
  int count = n;
  const auto& result = tuner.tune_now(sy, sx, a, count);
  REQUIRE(result.candidates.size() == 4);
  for (const auto& c : result.candidates) {
    INFO(c.cfg.text() << ": " << to_string(c.status) << " " << c.reason);
    if (c.cfg.at("ITEMS").as_int() == 8) {
      // Not in the file: its failure, naming config, architecture and file; the others carry on.
      CHECK(c.status == cotune::candidate_status::compile_error);
      CHECK_THAT(c.reason, Catch::Contains("ITEMS: 8") && Catch::Contains(d.arch()) &&
                               Catch::Contains(COTUNE_TEST_PRECOMPILED_FILE));
    } else {
      CHECK(c.status == cotune::candidate_status::ok);
    }
  }
  CHECK(result.best().at("ITEMS").as_int() != 8);
  tuner(sy, sx, a, count);
  CHECK(dy.to_vector() == expected);
  if (loaded_before) WARN("NVRTC was loaded before this test case began (a whole-program run): not checked here");
  else CHECK_FALSE(nvrtc_loaded());
}
#endif
