// Tests of cotune::cuda::cuda_backend: NVRTC compilation and the cubin cache run everywhere (NVRTC
// needs no GPU); loading, resource checks and launches are [gpu] tests that skip without a device.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/gpu/precompiled_file.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/binary_cache.hpp>

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;
using cotune::config;
using cotune::kernel_source;
using cotune::launch_options;

namespace {

/// A hand-made description of an H100/H200-class device: enough to compile for sm_90 without a GPU.
cuda::device sm90() { return cuda::device{.ordinal = 0, .cc = {9, 0}, .name = "hand-made sm_90"}; }

/// The first CUDA device, or nothing (the caller skips with a warning).
std::optional<cuda::device> first_gpu() {
  auto all = cuda::devices();
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string skip_reason() { return "skipped: no CUDA device here (" + cuda::availability().message + ")"; }

// out[i] = a * x[i] + y[i]; each block handles BLOCK elements with COTUNE_THREADS_PER_BLOCK threads.
const kernel_source saxpy{
    .name = "saxpy",
    .code = R"(
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK)
saxpy(float a, const float* x, const float* y, float* out, int n) {
  const int base = blockIdx.x * BLOCK;
  for (int k = threadIdx.x; k < BLOCK; k += COTUNE_THREADS_PER_BLOCK) {
    const int i = base + k;
    if (i < n) out[i] = a * x[i] + y[i];
  }
}
)",
    .entry = "saxpy"};

// A template kernel named through a name expression that uses a config parameter.
const kernel_source fill_template{
    .name = "fill_template",
    .code = R"(
template <int B>
__global__ void fill(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(B);
}
)",
    .entry = "fill<VALUE>"};

const kernel_source broken{.name = "broken",
                           .code = "extern \"C\" __global__ void broken(float* x) { x[0] = 1 }\n",
                           .entry = "broken"};

// 200 KB of static shared memory: ptxas refuses it (static shared memory is capped at 48 KB).
const kernel_source huge_static_shared{.name = "huge_static_shared",
                                       .code = R"(
extern "C" __global__ void huge_static_shared(float* out) {
  __shared__ float tile[51200];
  tile[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 51200];
}
)",
                                       .entry = "huge_static_shared"};

// Uses dynamic shared memory: out[i] = i, staged through shared memory of any size.
const kernel_source dynamic_shared{.name = "dynamic_shared",
                                   .code = R"(
extern "C" __global__ void dynamic_shared(float* out, int words) {
  extern __shared__ float stage[];
  for (int k = threadIdx.x; k < words; k += blockDim.x) stage[k] = float(k);
  __syncthreads();
  for (int k = threadIdx.x; k < words; k += blockDim.x) out[k] = stage[words - 1 - k];
}
)",
                                   .entry = "dynamic_shared"};

config saxpy_config(int block, int warps) { return config({{"BLOCK", block}}, launch_options{.num_warps = warps}); }

} // namespace

TEST_CASE("the backend satisfies the Backend concept and launches spans and scalars", "[cuda][cuda_backend]") {
  static_assert(cotune::Backend<cuda::cuda_backend>);
  static_assert(cotune::LaunchableWith<cuda::cuda_backend, float, cuda::device_span<const float>,
                                       cuda::device_span<const float>, cuda::device_span<float>, int>);
  static_assert(cotune::LaunchableWith<cuda::cuda_backend, cuda::device_buffer<float>>);
  static_assert(cotune::LaunchableWith<cuda::cuda_backend>);
  static_assert(std::is_copy_constructible_v<cuda::cuda_backend::function>);
  SUCCEED();
}

TEST_CASE("a kernel compiles for a hand-made sm_90 description without a GPU", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto bin = backend.compile(saxpy, saxpy_config(256, 4), sm90());
  CHECK_FALSE(bin.is_ptx);
  CHECK(bin.arch == "sm_90");
  CHECK(bin.lowered_name == "saxpy");
  REQUIRE(bin.image.size() > 4);
  CHECK(bin.image.substr(0, 4) == std::string("\x7f" "ELF")); // a cubin is an ELF file
  CHECK_FALSE(std::filesystem::exists(cache.cache_dir())); // compile is pure: it stores nothing
}

TEST_CASE("the binary cache stores a cubin with its meta and gives it back whole", "[cuda][cuda_backend][binary_cache]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  const auto c = saxpy_config(256, 4);
  const auto recipe = backend.binary_key(saxpy, c, sm90());
  CHECK(recipe.backend == "cuda");
  CHECK(recipe.file == "saxpy.cubin");
  CHECK(recipe.has_meta);
  auto first = binaries.get_or_compile(saxpy, c, sm90());
  CHECK_FALSE(first.from_cache);
  CHECK(first.key.size() == 64);
  auto second = binaries.get_or_compile(saxpy, c, sm90());
  REQUIRE(second.from_cache);
  CHECK(second.binary.image == first.binary.image);
  CHECK(second.binary.lowered_name == "saxpy");
  CHECK(second.binary.arch == "sm_90");
  CHECK_FALSE(second.binary.is_ptx);

  // An image from another write than its meta (a torn pair) is a miss, recompiled and repaired.
  cotune::file_cache entry(first.key);
  auto other = backend.compile(saxpy, saxpy_config(128, 4), sm90());
  entry.put(other.image, "saxpy.cubin");
  auto third = binaries.get_or_compile(saxpy, c, sm90());
  CHECK_FALSE(third.from_cache);
  CHECK(third.binary.image == first.binary.image);
  CHECK(binaries.get_or_compile(saxpy, c, sm90()).from_cache);
  // Meta that does not parse is a miss too.
  entry.put("{not json", "saxpy.cubin.meta");
  CHECK_FALSE(binaries.get_or_compile(saxpy, c, sm90()).from_cache);
}

TEST_CASE("config parameters become macros and the launch options COTUNE_ macros", "[cuda][cuda_backend]") {
  cuda::cuda_backend backend;
  auto c = config({{"BLOCK", 512}, {"FAST", true}, {"MODE", "2"}}, launch_options{.num_warps = 8, .maxnreg = 64});
  auto opts = backend.options_for(saxpy, c, sm90());
  auto has = [&](const std::string& o) { return std::find(opts.begin(), opts.end(), o) != opts.end(); };
  CHECK(has("-arch=sm_90"));
  CHECK(has("-DBLOCK=512"));
  CHECK(has("-DFAST=1"));
  CHECK(has("-DMODE=2"));
  CHECK(has("-DCOTUNE_NUM_WARPS=8"));
  CHECK(has("-DCOTUNE_THREADS_PER_BLOCK=256"));
  CHECK(has("--maxrregcount=64"));
}

TEST_CASE("a name expression instantiates a template with a config parameter", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto bin = backend.compile(fill_template, config({{"VALUE", 7}}), sm90());
  CHECK(bin.lowered_name == "_Z4fillILi7EEvPfi");
}

TEST_CASE("a kernel's own -arch option wins, and a virtual architecture yields PTX", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto k = saxpy;
  k.options = {"-arch=compute_90"};
  CHECK(backend.target_arch(k, sm90()) == "compute_90");
  auto opts = backend.options_for(k, saxpy_config(128, 4), sm90());
  CHECK(std::count_if(opts.begin(), opts.end(), [](const std::string& o) { return o.starts_with("-arch"); }) == 1);
  auto bin = backend.compile(k, saxpy_config(128, 4), sm90());
  CHECK(bin.is_ptx);
  CHECK(bin.arch == "compute_90");
  CHECK(bin.image.find(".entry saxpy") != std::string::npos);
  cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  CHECK(backend.binary_key(k, saxpy_config(128, 4), sm90()).file == "saxpy.ptx");
  (void)binaries.get_or_compile(k, saxpy_config(128, 4), sm90());
  auto again = binaries.get_or_compile(k, saxpy_config(128, 4), sm90());
  CHECK(again.from_cache);
  CHECK(again.binary.is_ptx);
  CHECK(again.binary.image == bin.image);
}

TEST_CASE("a compile error carries NVRTC's log and the config", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  try {
    (void)backend.compile(broken, config({{"BLOCK", 64}}), sm90());
    FAIL("expected a compile_error");
  } catch (const cotune::compile_error& e) {
    CHECK_THAT(e.log(), Catch::Contains("expected a \";\""));
    CHECK_THAT(e.what(), Catch::Contains("BLOCK: 64"));
    CHECK_THAT(e.what(), Catch::Contains("kernel 'broken'"));
    CHECK_THAT(e.what(), Catch::Contains("sm_90"));
    CHECK_THAT(e.what(), Catch::Contains("expected a \";\""));
  }
}

TEST_CASE("an unknown name expression is a compile error naming it", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto k = saxpy;
  k.entry = "no_such_kernel";
  CHECK_THROWS_AS(backend.compile(k, saxpy_config(128, 4), sm90()), cotune::compile_error);
}

TEST_CASE("too much static shared memory is out_of_resources at compile time", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  try {
    (void)backend.compile(huge_static_shared, config{}, sm90());
    FAIL("expected out_of_resources");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource() == "shared memory");
    CHECK(e.required() == 204800);
    CHECK(e.limit() == 48 * 1024);
  }
}

TEST_CASE("the cubin key changes with architecture, options, source, config and invalidating knobs",
          "[cuda][cuda_backend]") {
  cuda::cuda_backend backend;
  const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  const auto c = saxpy_config(256, 4);
  const auto base = binaries.key(saxpy, c, sm90());
  CHECK(binaries.key(saxpy, c, sm90()) == base);

  auto sm80 = sm90();
  sm80.cc = {8, 0};
  CHECK(binaries.key(saxpy, c, sm80) != base);

  auto with_option = saxpy;
  with_option.options = {"--use_fast_math"};
  CHECK(binaries.key(with_option, c, sm90()) != base);

  auto other_source = saxpy;
  other_source.code += "\n// a comment\n";
  CHECK(binaries.key(other_source, c, sm90()) != base);

  CHECK(binaries.key(saxpy, saxpy_config(512, 4), sm90()) != base);
  CHECK(binaries.key(saxpy, saxpy_config(256, 8), sm90()) != base);

  {
    auto scope = cuda::cuda_knobs().nvrtc_options.scoped("-lineinfo");
    CHECK(binaries.key(saxpy, c, sm90()) != base);
  }
  CHECK(binaries.key(saxpy, c, sm90()) == base);

  // The device's name and ordinal are not part of it: any sm_90 device shares the cubin.
  auto other_device = sm90();
  other_device.ordinal = 3;
  other_device.name = "another sm_90";
  CHECK(binaries.key(saxpy, c, other_device) == base);
}

TEST_CASE("a second compile is a cache hit and runs no NVRTC compilation", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend first;
  auto cold = cotune::binary_cache<cuda::cuda_backend>(first).get_or_compile(saxpy, saxpy_config(128, 4), sm90());
  REQUIRE_FALSE(cold.from_cache);

  const auto compilations = cuda::nvrtc().compilations();
  cuda::cuda_backend second; // a new instance: nothing is remembered in memory
  auto warm = cotune::binary_cache<cuda::cuda_backend>(second).get_or_compile(saxpy, saxpy_config(128, 4), sm90());
  CHECK(warm.from_cache);
  CHECK(cuda::nvrtc().compilations() == compilations);
  CHECK(warm.binary.image == cold.binary.image);
  CHECK(warm.binary.lowered_name == cold.binary.lowered_name);
  CHECK(warm.key == cold.key);
  CHECK(warm.binary.arch == cold.binary.arch);
}

TEST_CASE("a damaged cubin in the cache is a miss and is replaced", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  auto cold = binaries.get_or_compile(saxpy, saxpy_config(64, 2), sm90());
  int damaged = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cache.cache_dir()))
    if (entry.path().extension() == ".cubin") {
      std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "not a cubin";
      ++damaged;
    }
  REQUIRE(damaged == 1);
  auto again = binaries.get_or_compile(saxpy, saxpy_config(64, 2), sm90());
  CHECK_FALSE(again.from_cache);
  CHECK(again.binary.image == cold.binary.image);
  CHECK(binaries.get_or_compile(saxpy, saxpy_config(64, 2), sm90()).from_cache);
}

TEST_CASE("compiles run concurrently from several threads", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  std::vector<cuda::cuda_backend::binary> bins(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { bins[static_cast<std::size_t>(i)] = backend.compile(saxpy, saxpy_config(64 << i, 2), sm90()); });
  for (auto& t : threads) t.join();
  for (const auto& b : bins) CHECK(b.image.size() > 0);
  CHECK(bins[0].image != bins[1].image);
}

namespace {

/// A kernel NVRTC needs seconds to compile (1.3 s for 20000 lines on the build machine).
kernel_source slow_to_compile() {
  std::string code = "extern \"C\" __global__ void slow(float* x) {\n  float v = x[threadIdx.x];\n";
  for (int i = 0; i < 40000; ++i) code += "  v = v * v + " + std::to_string(i) + ".5f;\n";
  return {.name = "slow", .code = code + "  x[threadIdx.x] = v;\n}\n", .entry = "slow"};
}

} // namespace

TEST_CASE("a compile past COTUNE_COMPILE_TIMEOUT_MS is stopped midway with an error naming the knob",
          "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  auto limit = cotune::knobs().autotuning.compile_timeout_ms.scoped(300); // started by then; needs seconds more
  try {
    (void)backend.compile(slow_to_compile(), config{}, sm90());
    FAIL("expected a timeout_error");
  } catch (const cotune::timeout_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS = 300 ms"));
    CHECK_THAT(e.what(), Catch::Contains("kernel 'slow'"));
  }
  // Nothing was cached for it, and the next compile (no limit now) works.
  auto no_limit = cotune::knobs().autotuning.compile_timeout_ms.scoped(0);
  CHECK(backend.compile(saxpy, saxpy_config(64, 2), sm90()).image.size() > 0);
}

TEST_CASE("a cancelled compile is stopped and reported as cancelled", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  std::stop_source stop;
  std::thread canceller([&] {
    // Stops the compile while it runs, or before it starts: either way it is cancelled.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  try {
    (void)backend.compile(slow_to_compile(), config{}, sm90(), stop.get_token());
    canceller.join();
    FAIL("expected a timeout_error");
  } catch (const cotune::timeout_error& e) {
    canceller.join();
    CHECK_THAT(e.what(), Catch::Contains("was cancelled"));
  }
}

TEST_CASE("a missing NVRTC is a clear error naming COTUNE_LIBNVRTC_PATH", "[cuda][cuda_backend]") {
  cotune_test::private_cache cache;
  auto scope = cuda::cuda_knobs().libnvrtc_path.scoped("/nonexistent/libnvrtc.so.13");
  cuda::cuda_backend backend(cuda::cuda_backend::options{.preload_nvrtc = false});
  try {
    (void)backend.compile(saxpy, saxpy_config(128, 4), sm90());
    FAIL("expected an error");
  } catch (const cotune::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("/nonexistent/libnvrtc.so.13"));
    CHECK_THAT(e.what(), Catch::Contains("COTUNE_LIBNVRTC_PATH"));
  }
  CHECK_THROWS_AS(backend.fingerprint(sm90()), cotune::error);
}

TEST_CASE("the fingerprint holds NVRTC's version, the driver's and the architecture", "[cuda][cuda_backend]") {
  cuda::cuda_backend backend;
  const auto f = backend.fingerprint(sm90());
  CHECK_THAT(f, Catch::StartsWith("cuda;nvrtc " + cuda::nvrtc().version_text() + ";driver "));
  CHECK_THAT(f, Catch::EndsWith(";sm_90"));
  auto sm80 = sm90();
  sm80.cc = {8, 0};
  CHECK(backend.fingerprint(sm80) != f);
  CHECK(backend.device_name(sm90()) == "hand-made sm_90 (CUDA device 0, sm_90)");
}

TEST_CASE("without a GPU, devices() is empty and nothing throws", "[cuda][cuda_backend]") {
  cuda::cuda_backend backend;
  auto devices = backend.devices();
  if (!devices.empty()) {
    WARN("this machine has " << devices.size() << " CUDA device(s); the no-GPU behaviour is not observable here");
    return;
  }
  CHECK_FALSE(cuda::availability().message.empty());
}

// ---- [gpu] ---------------------------------------------------------------------------------------

TEST_CASE("a tuned-size vector kernel's output matches a CPU reference", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  INFO(cuda::availability().text());
  INFO(backend.device_name(*d) << ", " << d->sm_count << " SMs, L2 " << d->l2_bytes << " bytes");

  const int n = 1 << 22;
  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    // Small integers: a * x + y is exact in float, with or without a fused multiply-add.
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000);
    y[static_cast<std::size_t>(i)] = static_cast<float>(2 * (i % 7));
    expected[static_cast<std::size_t>(i)] = 3.0f * x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)];
  }
  cuda::device_buffer<float> dx(*d, x), dy(*d, y), out(*d, static_cast<std::size_t>(n));
  cuda::device_span<const float> sx = dx, sy = dy;
  cuda::device_span<float> sout = out;
  float a = 3.0f;
  int count = n;

  cuda::cuda_benchmarker bench(backend, *d);
  const std::vector<config> candidates{saxpy_config(128, 4), saxpy_config(256, 8), saxpy_config(1024, 4),
                                       saxpy_config(2048, 8)};
  double best_ms = std::numeric_limits<double>::infinity();
  std::optional<config> best;
  for (const auto& c : candidates) {
    auto fn = backend.load(backend.compile(saxpy, c, *d), saxpy, c, *d);
    const unsigned block = static_cast<unsigned>(c.at("BLOCK").as_int());
    const cotune::launch_grid grid{.x = (static_cast<unsigned>(n) + block - 1) / block};
    out.zero();
    backend.launch(fn, grid, a, sx, sy, sout, count);
    CHECK(out.to_vector() == expected); // every candidate is correct, not only the winner
    auto t = bench.bench([&] { backend.launch(fn, grid, a, sx, sy, sout, count); },
                         cotune::bench_options{.warmup_ms = 5, .rep_ms = 20, .quantiles = {0.5, 0.2, 0.8}});
    REQUIRE(t.size() == 3);
    if (t[0] < best_ms) {
      best_ms = t[0];
      best = c;
    }
  }
  REQUIRE(best);
  WARN("winner {" << best->text() << "} at " << best_ms << " ms for " << n << " elements");
  // The winner through the binary cache: stored once, then a hit.
  const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  (void)binaries.get_or_compile(saxpy, *best, *d);
  const auto cached = binaries.get_or_compile(saxpy, *best, *d);
  CHECK(cached.from_cache);
  auto winner = binaries.load(cached, saxpy, *best, *d);
  const unsigned block = static_cast<unsigned>(best->at("BLOCK").as_int());
  out.zero();
  backend.launch(winner, cotune::launch_grid{.x = (static_cast<unsigned>(n) + block - 1) / block}, a, sx, sy, sout, count);
  CHECK(out.to_vector() == expected);
}

TEST_CASE("a candidate with 2048 threads per block is rejected before launch", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto c = config({{"BLOCK", 2048}}, launch_options{.threads_per_block = 2048});
  // __launch_bounds__(2048) is itself refused by the compiler, so compile without it.
  auto k = saxpy;
  k.code = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";
  auto bin = backend.compile(k, c, *d);
  try {
    (void)backend.load(bin, k, c, *d);
    FAIL("expected out_of_resources");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource() == "threads per block");
    CHECK(e.required() == 2048);
    CHECK(e.limit() == d->max_threads_per_block);
  }
}

TEST_CASE("registers x threads beyond the device's register file is rejected before launch",
          "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  // 96 live accumulators per thread under a 255-register cap: far more than the 64 registers that
  // 1024 threads may each use.
  const kernel_source heavy{.name = "register_heavy",
                            .code = R"(
extern "C" __global__ void register_heavy(const float* in, float* out, int n) {
  float acc[96];
#pragma unroll
  for (int j = 0; j < 96; ++j) acc[j] = in[(threadIdx.x + j * 131) % n];
  for (int r = 0; r < 64; ++r) {
#pragma unroll
    for (int j = 0; j < 96; ++j) acc[j] = acc[j] * acc[(j + 1) % 96] + in[(r + j) % n];
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 96; ++j) s += acc[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)",
                            .entry = "register_heavy"};
  auto c = config({}, launch_options{.num_warps = 32, .maxnreg = 255});
  auto bin = backend.compile(heavy, c, *d);
  try {
    auto f = backend.load(bin, heavy, c, *d);
    WARN("the compiler kept register_heavy to " << f.registers << " registers per thread; the check is not exercised");
    CHECK(std::int64_t{f.registers} * 1024 <= d->max_registers_per_block);
  } catch (const cotune::out_of_resources& e) {
    INFO(e.what());
    CHECK(e.resource() == "registers");
    CHECK(e.required() > d->max_registers_per_block);
    CHECK(e.limit() == d->max_registers_per_block);
  }
}

TEST_CASE("too much static shared memory is rejected on a real device too", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  CHECK_THROWS_AS(backend.compile(huge_static_shared, config{}, *d), cotune::out_of_resources);
}

TEST_CASE("dynamic shared memory above 48 KB is opted into, above the device limit rejected",
          "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto c = config({}, launch_options{.num_warps = 8});
  auto f = backend.load(backend.compile(dynamic_shared, c, *d), dynamic_shared, c, *d);
  INFO("opt-in limit " << d->max_shared_per_block_optin << " bytes");
  REQUIRE(d->max_shared_per_block_optin > 100 * 1024);

  int words = 100 * 1024 / 4; // 100 KB: needs the opt-in
  cuda::device_buffer<float> out(*d, static_cast<std::size_t>(words));
  cuda::device_span<float> s = out;
  backend.launch(f, cotune::launch_grid{.shared_bytes = static_cast<unsigned>(words) * 4}, s, words);
  auto got = out.to_vector();
  CHECK(got.front() == static_cast<float>(words - 1));
  CHECK(got.back() == 0.0f);

  const auto too_much = static_cast<unsigned>(d->max_shared_per_block_optin + 1024);
  try {
    backend.launch(f, cotune::launch_grid{.shared_bytes = too_much}, s, words);
    FAIL("expected out_of_resources");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource() == "shared memory");
    CHECK(e.required() == f.static_shared_bytes + too_much);
    CHECK(e.limit() == d->max_shared_per_block_optin);
  }
  backend.synchronize(*d); // the refused launch left the device usable
}

TEST_CASE("a kernel that fails to compile is reported and the next candidate runs", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  CHECK_THROWS_AS(backend.compile(broken, config{}, *d), cotune::compile_error);
  auto f = backend.load(backend.compile(fill_template, config({{"VALUE", 5}}), *d), fill_template,
                        config({{"VALUE", 5}}), *d);
  cuda::device_buffer<float> out(*d, 1000);
  cuda::device_span<float> s = out;
  int n = 1000;
  backend.launch(f, cotune::launch_grid{.x = 8}, s, n);
  auto got = out.to_vector();
  CHECK(std::all_of(got.begin(), got.end(), [](float v) { return v == 5.0f; }));
}

TEST_CASE("a warm start with the cache populated compiles nothing", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const auto c = saxpy_config(256, 8);
  {
    cuda::cuda_backend cold;
    REQUIRE_FALSE(cotune::binary_cache<cuda::cuda_backend>(cold).get_or_compile(saxpy, c, *d).from_cache);
  }
  const auto compilations = cuda::nvrtc().compilations();
  cuda::cuda_backend warm;
  const cotune::binary_cache<cuda::cuda_backend> binaries(warm);
  auto bin = binaries.get_or_compile(saxpy, c, *d);
  CHECK(bin.from_cache);
  auto f = binaries.load(bin, saxpy, c, *d);
  CHECK(cuda::nvrtc().compilations() == compilations);

  const int n = 4096;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  cuda::device_buffer<float> dx(*d, x), dy(*d, y), out(*d, static_cast<std::size_t>(n));
  cuda::device_span<const float> sx = dx, sy = dy;
  cuda::device_span<float> so = out;
  float a = 4.0f;
  int count = n;
  warm.launch(f, cotune::launch_grid{.x = n / 256}, a, sx, sy, so, count);
  auto got = out.to_vector();
  CHECK(std::all_of(got.begin(), got.end(), [](float v) { return v == 6.0f; }));
}

TEST_CASE("functions launch from threads other than the one that loaded them", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto c = config({{"VALUE", 9}});
  auto f = backend.load(backend.compile(fill_template, c, *d), fill_template, c, *d);
  cuda::device_buffer<float> out(*d, 256);
  cuda::device_span<float> s = out;
  int n = 256;
  std::thread([&] { backend.launch(f, cotune::launch_grid{.x = 2}, s, n); }).join();
  auto got = out.to_vector();
  CHECK(std::all_of(got.begin(), got.end(), [](float v) { return v == 9.0f; }));
}

TEST_CASE("launch geometry beyond a device limit names the dimension and the limit", "[cuda][cuda_backend][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  cuda::cuda_backend backend;
  auto k = saxpy;
  k.code = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";
  // A block 65 deep fits the thread count (65 threads) but not the z limit (64): refused at load.
  auto deep = config({{"BLOCK", 65}}, launch_options{.block = cotune::block_dims{1, 1, 65}});
  try {
    (void)backend.load(backend.compile(k, deep, *d), k, deep, *d);
    FAIL("expected out_of_resources");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("block dimension z"));
    CHECK(e.required() == 65);
    CHECK(e.limit() == d->max_block_dims[2]);
  }
  // A grid 65536 high is refused by the driver; the error names grid dimension y and its limit.
  auto c = config({{"BLOCK", 32}}, launch_options{.num_warps = 1});
  auto f = backend.load(backend.compile(k, c, *d), k, c, *d);
  cuda::device_buffer<float> x(*d, 32), y(*d, 32), out(*d, 32);
  cuda::device_span<const float> sx = x, sy = y;
  cuda::device_span<float> so = out;
  float a = 1.0f;
  int n = 0;
  try {
    backend.launch(f, cotune::launch_grid{.x = 1, .y = 65536}, a, sx, sy, so, n);
    FAIL("expected out_of_resources");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("grid dimension y"));
    CHECK(e.limit() == d->max_grid_dims[1]);
  }
  // An explicit 2-D block in the grid is used as given (and the context survived the refusals).
  backend.launch(f, cotune::launch_grid{.x = 1, .block = cotune::block_dims{8, 4, 1}}, a, sx, sy, so, n);
  backend.synchronize(*d);
}

// --- Ahead-of-time compilation: a file of kernels that nvcc built at build time (tests/CMakeLists.txt
// runs cotune_precompile over tests/cuda/data/precompiled.job.json), read instead of compiling. ---

#ifdef COTUNE_TEST_PRECOMPILED_FILE
namespace {

const std::filesystem::path precompiled_path{COTUNE_TEST_PRECOMPILED_FILE};

/// The kernel as a program holds it: the job's source file's text, its name and entry.
kernel_source precompiled_kernel(std::string name, std::string entry) {
  auto code = cotune::detail::read_file(cotune_test::source_file("tests/cuda/data/precompiled_scale.cu"));
  REQUIRE(code);
  return {.name = std::move(name), .code = *std::move(code), .entry = std::move(entry)};
}
const kernel_source& scale_add() {
  static const auto k = precompiled_kernel("scale_add", "scale_add");
  return k;
}
const kernel_source& scale_add_items() {
  static const auto k = precompiled_kernel("scale_add_items", "scale_add_items<ITEMS>");
  return k;
}
/// A config of the job's spaces, written as a program writes it.
config items(int n) { return config({{"ITEMS", n}}, launch_options{.num_warps = 2}); }

/// The precompiled knobs for one test: the file, and how it is used.
struct use_precompiled {
  explicit use_precompiled(std::string mode, const std::filesystem::path& file = precompiled_path)
      : file_(cotune::knobs().runtime.precompiled_file.scoped(file.string())),
        mode_(cotune::knobs().runtime.precompiled.scoped(std::move(mode))) {}
  cotune::knob<std::optional<std::string>>::scope file_;
  cotune::knob<std::string>::scope mode_;
};

/// A copy of the file with `edit` applied to its bytes, at a path of its own (files are read once per path).
std::filesystem::path edited_copy(const cotune_test::temp_dir& dir, const std::string& name,
                                  const std::function<void(std::string&)>& edit) {
  auto bytes = cotune::detail::read_file(precompiled_path);
  REQUIRE(bytes);
  edit(*bytes);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << *bytes;
  return path;
}

} // namespace

TEST_CASE("the precompiled file holds an entry per config and architecture, made from the runtime's recipe",
          "[cuda][cuda_backend][precompiled]") {
  const auto file = cotune::gpu::precompiled_file::read(precompiled_path);
  const cuda::cuda_backend backend;
  // The job's configs are the ones a program writes by hand: the same canonical text.
  const auto job = cotune::batch::job_spec::load(cotune_test::source_file("tests/cuda/data/precompiled.job.json"));
  REQUIRE(job.kernels.at(0).configs().at(1).text() == items(2).text());
  CHECK(job.kernels.at(0).source.digest() == scale_add().digest());
  for (int n : {1, 2, 4}) {
    const auto* e = file.find("scale_add", items(n).text(), "sm_90");
    REQUIRE(e);
    CHECK(e->ok);
    CHECK(e->arch == "sm_90");
    CHECK(e->lowered_name == "scale_add"); // extern "C"
    CHECK(e->image.substr(0, 4) == std::string("\x7f" "ELF"));
    CHECK(e->compiler.find("nvcc") != std::string::npos);
    CHECK(e->recipe == cotune::gpu::precompiled_recipe(scale_add(), items(n), backend.precompiled_options(scale_add(), items(n), sm90())));
  }
  for (int n : {1, 4}) {
    const auto* e = file.find("scale_add_items", items(n).text(), "sm_90");
    REQUIRE(e);
    CHECK(e->lowered_name == fmt::format("_Z15scale_add_itemsILi{}EEvPfPKffi", n)); // nvcc's mangling, as NVRTC's
  }
  CHECK(file.find("scale_add", items(8).text(), "sm_90") == nullptr); // not in the job's space
  CHECK(file.find("scale_add_items", items(2).text(), "sm_90") == nullptr);
  CHECK(file.find("scale_add", items(1).text(), "sm_80") == nullptr); // not built for it
  CHECK(file.find("no_such_kernel", items(1).text(), "sm_90") == nullptr);
}

TEST_CASE("the backend takes a precompiled candidate instead of compiling it, and the cache stores nothing",
          "[cuda][cuda_backend][precompiled]") {
  cotune_test::private_cache cache;
  const use_precompiled knobs("prefer");
  const cuda::cuda_backend backend;
  const auto file = cotune::gpu::precompiled_file::read(precompiled_path);
  for (const auto* k : {&scale_add(), &scale_add_items()}) {
    auto bin = backend.prebuilt(*k, items(4), sm90());
    REQUIRE(bin);
    CHECK(bin->image == file.find(k->name, items(4).text(), "sm_90")->image);
    CHECK_FALSE(bin->is_ptx);
    CHECK(bin->arch == "sm_90");
  }
  // Through the binary cache, as a tuning compiles: the file's binary, no key, nothing stored.
  const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  const auto got = binaries.get_or_compile(scale_add(), items(2), sm90());
  CHECK(got.binary.lowered_name == "scale_add");
  CHECK(got.key.empty());
  CHECK_FALSE(got.from_cache);
  CHECK_FALSE(std::filesystem::exists(cache.cache_dir()));
  // The file names the build of the binaries in every result key.
  CHECK_THAT(backend.fingerprint(sm90()), Catch::EndsWith(";precompiled " + file.digest()));
}

TEST_CASE("a candidate the file lacks is compiled with prefer, and an error naming config, architecture and file with "
          "only",
          "[cuda][cuda_backend][precompiled]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  {
    const use_precompiled knobs("prefer");
    CHECK_FALSE(backend.prebuilt(scale_add(), items(8), sm90()));
    const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
    CHECK_FALSE(binaries.get_or_compile(scale_add(), items(8), sm90()).key.empty()); // compiled by NVRTC, cached
    const cuda::device sm80{.ordinal = 0, .cc = {8, 0}, .name = "hand-made sm_80"};
    CHECK_FALSE(backend.prebuilt(scale_add(), items(1), sm80)); // another architecture
  }
  const use_precompiled knobs("only");
  // The message names the kernel, the config, the architecture, the file and the knob.
  const auto names_everything = [](const std::string& what) {
    CHECK_THAT(what, Catch::Contains("kernel 'scale_add'") && Catch::Contains("{ITEMS: 8, num_warps: 2,") &&
                         Catch::Contains("for sm_90") && Catch::Contains(precompiled_path.string()) &&
                         Catch::Contains("COTUNE_PRECOMPILED=only") && Catch::Contains("has no entry for it"));
  };
  CHECK_THROWS_AS(backend.prebuilt(scale_add(), items(8), sm90()), cotune::compile_error);
  try {
    (void)backend.prebuilt(scale_add(), items(8), sm90());
  } catch (const cotune::compile_error& e) {
    names_everything(e.what());
  }
  // A tuning compiles through the binary cache: the same error, which the tuner records as the candidate's failure.
  const cotune::binary_cache<cuda::cuda_backend> binaries(backend);
  CHECK_THROWS_AS(binaries.get_or_compile(scale_add(), items(8), sm90()), cotune::compile_error);
  try {
    (void)binaries.get_or_compile(scale_add(), items(8), sm90());
  } catch (const cotune::compile_error& e) {
    names_everything(e.what());
  }
  CHECK(binaries.get_or_compile(scale_add(), items(1), sm90()).binary.lowered_name == "scale_add");
  CHECK_THAT(backend.fingerprint(sm90()), Catch::StartsWith("cuda;nvrtc unused;"));
}

TEST_CASE("an entry made from other compile options is not used, with a warning naming why",
          "[cuda][cuda_backend][precompiled]") {
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  (void)backend.take_warnings();
  const auto other_options = cuda::cuda_knobs().nvrtc_options.scoped("-lineinfo");
  {
    const use_precompiled knobs("prefer");
    CHECK_FALSE(backend.prebuilt(scale_add(), items(2), sm90()));
    const auto warnings = backend.take_warnings();
    CHECK(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("recipe digest differs") != std::string::npos && w.find("{ITEMS: 2, num_warps: 2,") != std::string::npos;
    }));
  }
  const use_precompiled knobs("only");
  CHECK_THROWS_WITH(backend.prebuilt(scale_add(), items(2), sm90()),
                    Catch::Contains("another source, entry or compile options") && Catch::Contains("{ITEMS: 2"));
  // Another source under the same name is refused the same way.
  auto changed = scale_add();
  changed.code += "\n// changed\n";
  CHECK_THROWS_WITH(backend.prebuilt(changed, items(2), sm90()), Catch::Contains("recipe digest differs"));
}

TEST_CASE("a damaged, truncated or foreign precompiled file is refused whole with a clear error",
          "[cuda][cuda_backend][precompiled]") {
  cotune_test::temp_dir dir;
  using cotune::gpu::precompiled_file;
  using cotune::gpu::precompiled_file_error;
  const auto flipped = edited_copy(dir, "flipped", [](std::string& b) { b[b.size() - 100] ^= 0x5a; }); // in an image
  CHECK_THROWS_WITH(precompiled_file::read(flipped), Catch::Contains("is damaged") && Catch::Contains("SHA-256") &&
                                                         Catch::Contains(flipped.string()));
  const auto index = edited_copy(dir, "index", [](std::string& b) { b[b.find("scale_add") + 1] = 'X'; });
  CHECK_THROWS_WITH(precompiled_file::read(index), Catch::Contains("its index does not match"));
  const auto cut = edited_copy(dir, "cut", [](std::string& b) { b.resize(b.size() / 2); });
  CHECK_THROWS_WITH(precompiled_file::read(cut), Catch::Contains("is truncated"));
  const auto foreign = edited_copy(dir, "foreign", [](std::string& b) { b = "\x7f" "ELF not ours"; });
  CHECK_THROWS_WITH(precompiled_file::read(foreign), Catch::Contains("is not a cotune precompiled file"));
  const auto newer = edited_copy(dir, "newer", [](std::string& b) { b.replace(0, 20, "cotune-precompiled 9"); });
  CHECK_THROWS_WITH(precompiled_file::read(newer), Catch::Contains("has format 9"));
  CHECK_THROWS_AS(precompiled_file::read(dir / "missing"), precompiled_file_error);

  // In use: `only` fails each candidate naming the file and why; `prefer` compiles instead, with a warning.
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  {
    const use_precompiled knobs("only", flipped);
    CHECK_THROWS_WITH(backend.prebuilt(scale_add(), items(1), sm90()),
                      Catch::Contains("{ITEMS: 1, num_warps: 2,") && Catch::Contains("is damaged") &&
                          Catch::Contains(flipped.string()));
    CHECK_THAT(backend.fingerprint(sm90()), Catch::EndsWith(";precompiled unreadable"));
  }
  (void)backend.take_warnings();
  const use_precompiled knobs("prefer", cut);
  CHECK_FALSE(backend.prebuilt(scale_add(), items(1), sm90()));
  const auto warnings = backend.take_warnings();
  CHECK(std::any_of(warnings.begin(), warnings.end(),
                    [](const std::string& w) { return w.find("is truncated") != std::string::npos; }));
}

TEST_CASE("the off mode ignores the file, and a file written and read back is the same", "[cuda][cuda_backend][precompiled]") {
  const cuda::cuda_backend backend;
  {
    const use_precompiled knobs("off");
    CHECK_FALSE(backend.prebuilt(scale_add(), items(1), sm90()));
    CHECK(backend.fingerprint(sm90()).find("precompiled") == std::string::npos);
  }
  cotune_test::temp_dir dir;
  const auto file = cotune::gpu::precompiled_file::read(precompiled_path);
  cotune::gpu::precompiled_file::write(dir / "copy", file.entries());
  CHECK(cotune::gpu::precompiled_file::read(dir / "copy").entries() == file.entries());
  CHECK(cotune::gpu::precompiled_arch_matches("gfx90a", "gfx90a:sramecc+:xnack-"));
  CHECK_FALSE(cotune::gpu::precompiled_arch_matches("gfx90a:xnack+", "gfx90a:sramecc+:xnack-"));
  CHECK_FALSE(cotune::gpu::precompiled_arch_matches("sm_90", "sm_80"));
}

TEST_CASE("a precompiled cubin computes what NVRTC's does, for every config of the file",
          "[cuda][cuda_backend][precompiled][gpu]") {
  auto d = first_gpu();
  if (!d) {
    WARN(skip_reason());
    return;
  }
  cotune_test::private_cache cache;
  const cuda::cuda_backend backend;
  const int n = 10000; // not a multiple of any block
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f;
    y[static_cast<std::size_t>(i)] = static_cast<float>(i % 13);
  }
  cuda::device_buffer<float> dx(*d, x);
  cuda::device_span<const float> sx = dx;
  float a = 3.0f;
  int count = n;
  const auto run = [&](const cuda::cuda_backend::function& f, int items_per_thread) {
    cuda::device_buffer<float> dy(*d, y);
    cuda::device_span<float> sy = dy;
    backend.launch(f, cotune::launch_grid{.x = static_cast<unsigned>((n + 64 * items_per_thread - 1) / (64 * items_per_thread))},
                   sy, sx, a, count);
    return dy.to_vector();
  };
  const auto file = cotune::gpu::precompiled_file::read(precompiled_path);
  const std::vector<std::pair<const kernel_source*, int>> cases{
      {&scale_add(), 1}, {&scale_add(), 2}, {&scale_add(), 4}, {&scale_add_items(), 1}, {&scale_add_items(), 4}};
  for (const auto& [k, n_items] : cases) {
    INFO(k->name << " {" << items(n_items).text() << "}");
    std::optional<cuda::cuda_backend::binary> pre;
    {
      const use_precompiled knobs("only");
      pre = backend.prebuilt(*k, items(n_items), *d);
    }
    REQUIRE(pre);
    const auto compiled = backend.compile(*k, items(n_items), *d);
    CHECK(pre->lowered_name == compiled.lowered_name); // nvcc mangles a template instance as NVRTC names it
    const auto from_file = run(backend.load(*pre, *k, items(n_items), *d), n_items);
    const auto from_nvrtc = run(backend.load(compiled, *k, items(n_items), *d), n_items);
    CHECK(from_file == from_nvrtc);
    CHECK(from_file[17] == 3.0f * x[17] + y[17]);
  }
}
#endif
