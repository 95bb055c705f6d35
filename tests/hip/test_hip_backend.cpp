// Tests for cotune/hip/hip_backend.hpp. Compiles are real (hiprtc, for explicit gfx architectures, no
// AMD GPU needed: CI compiles here); loading and launching need an AMD GPU and skip without one
// ([gpu]). Kept to a few compiles: hiprtc takes ~0.5-1 s each on the 2-core CI machine.

#include <chrono>
#include <cstring>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/hip/hip.hpp>
#include <cotune/tune/binary_cache.hpp>

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

namespace hip = cotune::hip;
using cotune::config;
using cotune::kernel_source;
using cotune::launch_options;

namespace {

/// Hand-made descriptions: enough to compile for an architecture without an AMD GPU.
hip::device gfx90a() { return hip::device{.arch_name = "gfx90a", .name = "hand-made MI200"}; }
hip::device gfx908() { return hip::device{.arch_name = "gfx908", .name = "hand-made MI100"}; }

/// Skips (returns false, with the reason) where hiprtc cannot be loaded.
bool have_hiprtc() {
  if (hip::try_hiprtc()) return true;
  WARN("skipped: no hiprtc here (" << hip::hiprtc_error() << ")");
  return false;
}

const kernel_source scale{.name = "scale",
                          .code = R"(
extern "C" __global__ void __launch_bounds__(COTUNE_THREADS_PER_BLOCK) scale(float* x, float a, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (threadIdx.x < BLOCK && i < n) x[i] *= a;
}
)",
                          .entry = "scale"};

config scale_config(int block, int warps) { return config({{"BLOCK", block}}, launch_options{.num_warps = warps}); }

/// The ELF machine of an AMD GPU code object (EM_AMDGPU = 224), or -1.
int elf_machine(const std::string& image) {
  if (image.size() < 20 || image.compare(0, 4, "\x7f" "ELF") != 0) return -1;
  std::uint16_t machine = 0;
  std::memcpy(&machine, image.data() + 18, sizeof machine);
  return machine;
}

std::string slow_to_compile() {
  std::string src = "extern \"C\" __global__ void slow(float* x) {\n  float v = x[threadIdx.x];\n";
  for (int i = 0; i < 40000; ++i) src += "  v = v * v + " + std::to_string(i) + ".5f;\n";
  return src + "  x[threadIdx.x] = v;\n}\n";
}

} // namespace

TEST_CASE("the hiprtc options name the architecture, the config and the wavefront", "[hip][hip_backend]") {
  const hip::hip_backend backend;
  const auto opts = backend.options_for(scale, scale_config(256, 4), gfx90a());
  CHECK(opts.front() == "--offload-arch=gfx90a");
  CHECK(std::find(opts.begin(), opts.end(), "-DBLOCK=256") != opts.end());
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_WARP_SIZE=64") != opts.end());
  // num_warps counts wavefronts: 4 x 64 threads on CDNA.
  CHECK(std::find(opts.begin(), opts.end(), "-DCOTUNE_THREADS_PER_BLOCK=256") != opts.end());
  hip::device rdna{.arch_name = "gfx1100", .warp_size = 32};
  const auto rdna_opts = backend.options_for(scale, scale_config(256, 4), rdna);
  CHECK(std::find(rdna_opts.begin(), rdna_opts.end(), "-DCOTUNE_THREADS_PER_BLOCK=128") != rdna_opts.end());
  CHECK(backend.target_arch(kernel_source{.name = "k", .code = "", .entry = "k", .options = {"--offload-arch=gfx908"}},
                            gfx90a()) == "gfx908");
}

TEST_CASE("candidates compile to AMD GPU code objects for two architectures, cached and keyed by architecture",
          "[hip][hip_backend][binary_cache]") {
  if (!have_hiprtc()) return;
  cotune_test::private_cache cache;
  const hip::hip_backend backend;
  const cotune::binary_cache<hip::hip_backend> binaries(backend);
  const auto c = scale_config(256, 4);
  const auto recipe = backend.binary_key(scale, c, gfx90a());
  CHECK(recipe.backend == "hip");
  CHECK(recipe.file == "scale.hsaco");
  CHECK(binaries.key(scale, c, gfx90a()) != binaries.key(scale, c, gfx908()));

  for (const auto& d : {gfx90a(), gfx908()}) {
    INFO(d.arch());
    auto first = binaries.get_or_compile(scale, c, d);
    CHECK_FALSE(first.from_cache);
    CHECK(elf_machine(first.binary.image) == 224); // EM_AMDGPU
    CHECK(first.binary.arch == d.arch());
    CHECK(first.binary.lowered_name == "scale");
    CHECK(first.binary.image.find(d.processor()) != std::string::npos); // the ELF names its target
    auto again = binaries.get_or_compile(scale, c, d);
    REQUIRE(again.from_cache);
    CHECK(again.binary.image == first.binary.image);
    CHECK(again.binary.arch == d.arch());
  }
  // Compiled in warm compile processes (the knob's default).
  CHECK(hip::hiprtc().warm_compilations() >= 2);
}

TEST_CASE("a kernel that does not compile names the config, the architecture and hiprtc's log",
          "[hip][hip_backend]") {
  if (!have_hiprtc()) return;
  const hip::hip_backend backend;
  const kernel_source broken{.name = "broken", .code = "extern \"C\" __global__ void broken(float* x) { x[0] = 1 }\n",
                             .entry = "broken"};
  try {
    (void)backend.compile(broken, scale_config(64, 1), gfx90a());
    FAIL("expected a compile_error");
  } catch (const cotune::compile_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("kernel 'broken'"));
    CHECK_THAT(e.what(), Catch::Contains("BLOCK=64"));
    CHECK_THAT(e.what(), Catch::Contains("for gfx90a with hiprtc"));
    CHECK_THAT(e.log(), Catch::Contains("expected ';'"));
  }
}

TEST_CASE("an architecture hiprtc cannot compile for fails that candidate only, naming the architecture",
          "[hip][hip_backend]") {
  if (!have_hiprtc()) return;
  const hip::hip_backend backend;
  auto on = hip::hip_knobs().compile_processes.scoped(true);
  // HIP 5.2's hiprtc crashes (SIGSEGV) on targets newer than it knows, such as gfx942; a newer one
  // reports an error. Either way the candidate fails with the architecture in the message, and this
  // process goes on.
  const hip::device unknown{.arch_name = "gfx9999"};
  try {
    (void)backend.compile(scale, scale_config(64, 1), unknown);
    FAIL("expected a compile_error or compiler_crashed");
  } catch (const cotune::compile_error& e) { // compiler_crashed is one
    CHECK_THAT(e.what(), Catch::Contains("gfx9999"));
    CHECK_THAT(e.what(), Catch::Contains("kernel 'scale'"));
  }
  CHECK(backend.compile(scale, scale_config(64, 1), gfx90a()).image.size() > 0);
}

TEST_CASE("a HIP compile past COTUNE_COMPILE_TIMEOUT_MS is stopped midway with an error naming the knob",
          "[hip][hip_backend]") {
  if (!have_hiprtc()) return;
  const hip::hip_backend backend;
  auto on = hip::hip_knobs().compile_processes.scoped(true);
  auto limit = cotune::knobs().autotuning.compile_timeout_ms.scoped(300);
  const kernel_source slow{.name = "slow", .code = slow_to_compile(), .entry = "slow"};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)backend.compile(slow, config{}, gfx90a());
    FAIL("expected a timeout_error");
  } catch (const cotune::timeout_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS = 300 ms"));
    CHECK_THAT(e.what(), Catch::Contains("kernel 'slow'"));
    CHECK_THAT(e.what(), Catch::Contains("gfx90a"));
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)); // stopped, not waited for
}

TEST_CASE("a HIP kernel is loaded, its resources checked, and launched on an AMD GPU", "[hip][hip_backend][gpu]") {
  const auto devices = hip::devices();
  if (devices.empty()) {
    WARN("skipped: no HIP device here (" << hip::availability().message << ")");
    return;
  }
  const auto& d = devices.front();
  const hip::hip_backend backend;
  const auto c = scale_config(256, 256 / d.warp_size);
  const auto f = backend.load(backend.compile(scale, c, d), scale, c, d);
  CHECK(f.threads_per_block == 256);
  const auto& ctx = hip::runtime().context(d.ordinal);
  void* x = nullptr;
  REQUIRE(ctx.api().malloc(&x, 1024 * sizeof(float)) == hip::hip_success);
  std::vector<float> host(1024, 2.0f);
  ctx.check(ctx.api().memcpy_htod_async(x, host.data(), host.size() * sizeof(float), ctx.stream()), "copy");
  float a = 3.0f;
  int n = 1024;
  backend.launch(f, cotune::launch_grid{.x = 4}, x, a, n);
  ctx.check(ctx.api().memcpy_dtoh_async(host.data(), x, host.size() * sizeof(float), ctx.stream()), "copy back");
  backend.synchronize(d);
  CHECK(host[0] == 6.0f);
  CHECK(host[1023] == 6.0f);
  hip::hip_benchmarker bench(backend, d);
  const auto t = bench.bench([&] { backend.launch(f, cotune::launch_grid{.x = 4}, x, a, n); }, {});
  CHECK(t.front() > 0.0);
  (void)ctx.api().free(x);
}

TEST_CASE("a HIP module's __constant__ global is found and written, and a kernel launches on the caller's stream",
          "[hip][hip_backend][gpu]") {
  const auto devices = hip::devices();
  if (devices.empty()) {
    WARN("skipped: no HIP device here (" << hip::availability().message << ")");
    return;
  }
  const auto& d = devices.front();
  const hip::hip_backend backend;
  const kernel_source scaled{.name = "scaled",
                             .code = R"(
__constant__ float factor[2];
extern "C" __global__ void scaled(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor[0] + factor[1];
}
)",
                             .entry = "scaled"};
  const auto c = scale_config(256, 256 / d.warp_size);
  const auto f = backend.load(backend.compile(scaled, c, d), scaled, c, d);
  CHECK_FALSE(backend.find_global(f, "no_such_global").has_value());
  auto g = backend.find_global(f, "factor");
  REQUIRE(g.has_value());
  REQUIRE(g->bytes == 2 * sizeof(float));
  const float written[2] = {1.5f, 1.5f};
  g->write(g->address, written, sizeof written);
  float read[2] = {0, 0};
  g->read(read, g->address, sizeof read);
  CHECK(read[1] == 1.5f);

  const auto& ctx = hip::runtime().context(d.ordinal);
  ctx.make_current();
  hip::hip_stream mine = nullptr;
  REQUIRE(ctx.api().stream_create_with_flags(&mine, hip::hip_stream_non_blocking) == hip::hip_success);
  CHECK_FALSE(backend.is_capturing(mine));
  void* x = nullptr;
  REQUIRE(ctx.api().malloc(&x, 1024 * sizeof(float)) == hip::hip_success);
  std::vector<float> host(1024, 2.0f);
  ctx.check(ctx.api().memcpy_htod_async(x, host.data(), host.size() * sizeof(float), mine), "copy");
  int n = 1024;
  backend.launch_on(mine, f, cotune::launch_grid{.x = 4}, x, n);
  ctx.check(ctx.api().memcpy_dtoh_async(host.data(), x, host.size() * sizeof(float), mine), "copy back");
  backend.synchronize_stream(mine);
  CHECK(host[0] == 6.0f);
  CHECK(host[1023] == 6.0f);
  (void)ctx.api().free(x);
  (void)ctx.api().stream_destroy(mine);
}

#if defined(COTUNE_TEST_PRECOMPILED_FILE) && COTUNE_TEST_PRECOMPILED_HIP
// Ahead-of-time compilation for HIP: tests/CMakeLists.txt has hipcc build the job's HIP kernel for gfx90a
// into the precompiled file (cotune_precompile); the backend takes it instead of calling hiprtc.
TEST_CASE("a HIP kernel built by hipcc ahead of time is taken from the precompiled file for any gfx90a feature setting",
          "[hip][hip_backend][precompiled]") {
  cotune_test::private_cache cache;
  const auto code = cotune::detail::read_file(cotune_test::source_file("tests/cuda/data/precompiled_scale.cu"));
  REQUIRE(code);
  const kernel_source k{.name = "scale_add_hip", .code = *code, .entry = "scale_add"};
  const auto file = cotune::knobs().runtime.precompiled_file.scoped(COTUNE_TEST_PRECOMPILED_FILE);
  const auto mode = cotune::knobs().runtime.precompiled.scoped("only");
  const hip::hip_backend backend;
  // A device reports its full target; the entry was built for the bare processor, which runs on each.
  const hip::device mi200{.arch_name = "gfx90a:sramecc+:xnack-", .name = "hand-made MI200"};
  for (int items : {1, 2}) {
    const config c({{"ITEMS", items}}, launch_options{.num_warps = 2});
    INFO(c.text());
    const auto bin = backend.prebuilt(k, c, mi200);
    REQUIRE(bin);
    CHECK(bin->lowered_name == "scale_add");
    CHECK(bin->arch == "gfx90a");
    CHECK(bin->image.substr(0, 4) == std::string("\x7f" "ELF")); // a bare code object, not an offload bundle
  }
  // Not built for gfx908: with `only`, the candidate's error names the config, the target and the file.
  CHECK_THROWS_WITH(backend.prebuilt(k, config({{"ITEMS", 1}}, launch_options{.num_warps = 2}), gfx908()),
                    Catch::Contains("{ITEMS: 1, num_warps: 2,") && Catch::Contains("for gfx908") &&
                        Catch::Contains(COTUNE_TEST_PRECOMPILED_FILE));
}
#endif
