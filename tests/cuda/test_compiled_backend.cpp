// Tests of compiled candidates (gpu/compiled_kernels.hpp, gpu/compiled_backend.hpp,
// cuda/compiled_backend.hpp, gpu/program_module.hpp). The grid helper, the table, the build's identity
// and the binary cache's bypass run everywhere (the table of plain host functions stands for kernels
// where no compiler runs); with nvcc, tests/cuda/compiled_kernels.cu adds real kernels
// (COTUNE_TEST_NVCC), whose device images are found in this very program; tuning them on a GPU, a
// graph capture of the tuned call and a trapping candidate in the isolation worker are [gpu] tests
// that skip without a device.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>
#include <cotune/cuda/compiled_backend.hpp>
#include <cotune/cuda/cuda.hpp>
#include <cotune/tune/binary_cache.hpp>

#if COTUNE_TEST_NVCC
#include "compiled_kernels.hpp"
#endif

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;

namespace {

/// Finds "device functions" of plain host functions: the table's own logic, with no runtime.
struct host_runtime {
  template <class Kernel>
  static int lookup(void** function, const void* host_address) {
    *function = const_cast<void*>(host_address);
    return 0;
  }
};

template <int A, int B>
void host_kernel(const float*, float*, int) {}

using host_kernels = cotune::gpu::compiled_kernels<void(const float*, float*, int), host_runtime>;

host_kernels host_grid() {
  using cotune::gpu::axis;
  return host_kernels{}.add_grid([](auto a, auto b) { return host_kernel<a, b>; }, axis<1, 2, 3>{"A"},
                                 axis<10, 20>{"B"});
}

/// A hand-made description of an H100/H200-class device.
cuda::device sm90() { return cuda::device{.ordinal = 0, .cc = {9, 0}, .name = "hand-made sm_90"}; }

} // namespace

TEST_CASE("add_grid instantiates every point of its axes, the first axis varying slowest", "[cuda][compiled]") {
  const host_kernels k = host_grid();
  REQUIRE(k.size() == 6);
  const std::vector<std::pair<int, int>> expected{{1, 10}, {1, 20}, {2, 10}, {2, 20}, {3, 10}, {3, 20}};
  for (std::size_t i = 0; i < k.size(); ++i) {
    const auto& e = k.entries()[i];
    REQUIRE(e.params.size() == 2);
    CHECK(e.params[0].name == "A");
    CHECK(e.params[0].integer == expected[i].first);
    CHECK(e.params[1].name == "B");
    CHECK(e.params[1].integer == expected[i].second);
  }
  // Each point is its own instantiation.
  CHECK(k.entries()[0].host_address == reinterpret_cast<const void*>(&host_kernel<1, 10>));
  CHECK(k.entries()[5].host_address == reinterpret_cast<const void*>(&host_kernel<3, 20>));
  void* found = nullptr;
  CHECK(k.entries()[3].lookup(&found, k.entries()[3].host_address) == 0);
  CHECK(found == reinterpret_cast<const void*>(&host_kernel<2, 20>));
}

TEST_CASE("a compiled backend's configs, source and compile name the candidates; an unknown config is a compile error",
          "[cuda][compiled]") {
  const cotune::gpu::compiled_backend<cuda::detail::compiled_api, void(const float*, float*, int)> backend{
      host_kernels{}
          .add({{"BLOCK", 64}, {"FAST", true}, {"MODE", "a"}}, host_kernel<0, 0>)
          .add({{"BLOCK", 128}, {"FAST", false}, {"MODE", "b"}}, host_kernel<0, 1>)
          .threads_from("BLOCK")};
  REQUIRE(backend.configs().size() == 2);
  const cotune::config& first = backend.configs()[0];
  CHECK(first.at("BLOCK") == cotune::value(64));
  CHECK(first.at("FAST") == cotune::value(true));
  CHECK(first.at("MODE") == cotune::value("a"));
  CHECK(first.launch().threads() == 64); // threads_from("BLOCK")
  CHECK(backend.configs()[1].launch().threads() == 128);

  const cotune::kernel_source k = backend.source("scale");
  CHECK(k.name == "scale");
  CHECK_THAT(k.code, Catch::Contains(first.text()) && Catch::Contains(backend.configs()[1].text()));
  CHECK(backend.compile(k, backend.configs()[1], sm90()).index == 1);
  CHECK(backend.from_image(backend.to_image({1}))->index == 1);
  CHECK_FALSE(backend.from_image({"7", {}, {}}).has_value());
  CHECK_THROWS_AS(backend.compile(k, cotune::config{{"BLOCK", 96}}, sm90()), cotune::compile_error);
  CHECK_THROWS_WITH(backend.compile(k, cotune::config{{"BLOCK", 96}}, sm90()),
                    Catch::Contains("no compiled candidate") && Catch::Contains("BLOCK: 96"));
}

TEST_CASE("the fingerprint names the program's build, read from the file that holds the kernels",
          "[cuda][compiled]") {
  const cotune::gpu::compiled_backend<cuda::detail::compiled_api, void(const float*, float*, int)> backend{host_grid()};
  const std::string fingerprint = backend.fingerprint(sm90());
  const auto& module = cotune::gpu::program_module_of(reinterpret_cast<const void*>(&host_kernel<1, 10>));
  CHECK(module.file == "/proc/self/exe");
  CHECK((module.build.starts_with("build-id:") || module.build.starts_with("sha256:")));
  CHECK_THAT(fingerprint, Catch::StartsWith("cuda-compiled;" + module.build + ";") && Catch::EndsWith(";sm_90"));
  // Another file (the C library) is another build.
  const auto& libc = cotune::gpu::program_module_of(reinterpret_cast<const void*>(&std::fopen));
  CHECK(libc.file != module.file);
  CHECK(libc.build != module.build);
  CHECK(&cotune::gpu::program_module_of(reinterpret_cast<const void*>(&host_kernel<3, 20>)) == &module); // read once
  CHECK_THROWS_AS(cotune::gpu::program_module_of(nullptr), cotune::error);
}

TEST_CASE("the build id is the one the linker wrote into the executable", "[cuda][compiled]") {
  const auto& module = cotune::gpu::program_module_of(reinterpret_cast<const void*>(&host_kernel<1, 10>));
  if (!module.build.starts_with("build-id:")) {
    WARN("skipped: this program has no GNU build ID (" << module.build << ")");
    return;
  }
  // The note's descriptor, found in the file's bytes: the identity read from memory is the file's.
  std::ifstream in("/proc/self/exe", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string hex = module.build.substr(9);
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  CHECK(bytes.find("GNU" + std::string(1, '\0') + raw) != std::string::npos);
}

TEST_CASE("the binary cache neither reads nor stores a compiled backend's candidates", "[cuda][compiled]") {
  cotune_test::private_cache cache;
  using backend_type = cotune::gpu::compiled_backend<cuda::detail::compiled_api, void(const float*, float*, int)>;
  const backend_type backend{host_grid()};
  const cotune::binary_cache<backend_type> binaries(backend);
  const auto k = backend.source("scale");
  for (std::size_t i = 0; i < backend.configs().size(); ++i) {
    const auto got = binaries.get_or_compile(k, backend.configs()[i], sm90());
    CHECK(got.binary.index == i);
    CHECK_FALSE(got.from_cache);
    CHECK(got.key.empty());
    CHECK_FALSE(binaries.companion(k, backend.configs()[i], sm90()).has_value());
  }
  CHECK((!std::filesystem::exists(cache.cache_dir()) || std::filesystem::is_empty(cache.cache_dir())));
}

#if COTUNE_TEST_NVCC

namespace {

using scale_tuner =
    cotune::autotuner<void(cuda::device_span<const float>, cuda::device_span<float>, int),
                      cuda::compiled_backend<cotune_test::scale_signature>>;

scale_tuner::options scale_options() {
  scale_tuner::options o;
  o.arg_names = {"x", "y", "n"};
  o.key = {"n"};
  o.grid = [](const cotune::config& c, const cuda::device_span<const float>&, const cuda::device_span<float>&,
              const int& n) {
    return cotune::launch_grid{
        static_cast<unsigned>(cotune::cdiv(n, c.at("BLOCK").as_int() * c.at("ITEMS").as_int())), 1, 1};
  };
  o.bench = cotune::bench_options{.warmup_ms = 2.0, .rep_ms = 10.0};
  return o;
}

/// The first CUDA device with n inputs and n outputs on it, and a private cache; null, with a skip
/// message, without a device.
struct gpu_data {
  cotune_test::private_cache cache;
  cuda::device d;
  std::vector<float> xs;
  cuda::device_buffer<float> x, y;
  int n;

  gpu_data(const cuda::device& device, std::vector<float> values)
      : d(device), xs(std::move(values)), x(d, xs), y(d, xs.size()), n(static_cast<int>(xs.size())) {}

  [[nodiscard]] static std::unique_ptr<gpu_data> make(int n) {
    const auto devices = cuda::devices();
    if (devices.empty()) {
      WARN("skipped: no CUDA device here (" << cuda::availability().message << ")");
      return nullptr;
    }
    std::vector<float> values(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) values[std::size_t(i)] = static_cast<float>(i % 101);
    return std::make_unique<gpu_data>(devices.front(), std::move(values));
  }
  /// Whether y holds 2 x + 1 (after the device's work so far).
  [[nodiscard]] bool scaled() const {
    const auto got = y.to_vector();
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (got[i] != 2.0f * xs[i] + 1.0f) return false;
    return true;
  }
};

bool nvrtc_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libnvrtc") != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("nvcc's kernels are in the table, and their device images are found in this program", "[cuda][compiled]") {
  const auto kernels = cotune_test::scale_kernels();
  REQUIRE(kernels.size() == 10);
  CHECK(kernels.entries()[0].params[0].name == "BLOCK");
  const auto& module = cotune::gpu::program_module_of(kernels.entries()[0].host_address);
  CHECK(module.file == "/proc/self/exe");
  REQUIRE_FALSE(module.fat_binaries.empty()); // compiled_kernels.cu's, at least
  for (auto fat : module.fat_binaries) {
    std::uint32_t magic = 0;
    std::memcpy(&magic, fat.data(), sizeof magic);
    CHECK(magic == 0xba55ed50u);
    CHECK(fat.size() > 16);
  }
}

TEST_CASE("compiled candidates are tuned on the GPU, without NVRTC, and the winner computes the reference",
          "[cuda][compiled][gpu]") {
  const auto data = gpu_data::make(100'003);
  if (!data) return;
  auto& [cache, d, xs, x, y, n] = *data;
  const cuda::compiled_backend<cotune_test::scale_signature> backend{cotune_test::scale_kernels()};
  auto cached = scale_options();
  cached.cache_results = true; // off by default: the second tuner below must find the first one's result
  {
    scale_tuner tuner{backend.source("compiled_scale"), backend.configs(), cached, backend};
    const auto& result = tuner.tune_now(x, y, n);
    REQUIRE(result.candidates.size() == 10);
    for (const auto& c : result.candidates) {
      INFO(c.cfg.text() << ": " << c.reason);
      CHECK(c.status == cotune::candidate_status::ok);
      CHECK_FALSE(c.binary_from_cache);
    }
    y.zero();
    tuner(x, y, n);
    backend.synchronize(d);
    CHECK(data->scaled());
    CHECK(tuner.measured_tunings() == 1);
  }
  CHECK_FALSE(nvrtc_loaded());
  // A second tuner of the same build finds the result in the cache.
  scale_tuner again{backend.source("compiled_scale"), backend.configs(), cached, backend};
  y.zero();
  again(x, y, n);
  backend.synchronize(d);
  CHECK(data->scaled());
  CHECK(again.cached_tunings() == 1);
  CHECK(again.measured_tunings() == 0);
}

TEST_CASE("a tuned compiled kernel on the caller's stream is captured into a CUDA graph and replayed",
          "[cuda][compiled][gpu][graph]") {
  const auto data = gpu_data::make(4099);
  if (!data) return;
  auto& [cache, d, xs, x, y, n] = *data;
  const auto& ctx = cuda::driver().context(d.ordinal);
  const auto& api = ctx.api();
  ctx.make_current();
  CUstream stream = nullptr;
  REQUIRE(api.stream_create(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  const cuda::compiled_backend<cotune_test::scale_signature> backend{cotune_test::scale_kernels()};
  scale_tuner tuner{backend.source("compiled_graph"), backend.configs(), scale_options(), backend};
  (void)tuner.tune_now(x, y, n);
  y.zero();
  backend.synchronize(d);
  CUgraph graph = nullptr;
  REQUIRE(api.stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(backend.is_capturing(stream));
  tuner.on(stream)(x, y, n);
  REQUIRE(api.stream_end_capture(stream, &graph) == CUDA_SUCCESS);
  const auto before = y.to_vector();
  CHECK(std::all_of(before.begin(), before.end(), [](float v) { return v == 0.0f; })); // captured, not run
  CUgraphExec exec = nullptr;
  REQUIRE(api.graph_instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  REQUIRE(api.graph_launch(exec, stream) == CUDA_SUCCESS);
  REQUIRE(api.stream_synchronize(stream) == CUDA_SUCCESS);
  CHECK(data->scaled());
  (void)api.graph_exec_destroy(exec);
  (void)api.graph_destroy(graph);
  (void)api.stream_destroy(stream);
}

TEST_CASE("a compiled candidate that traps costs that candidate alone in the isolation worker",
          "[cuda][compiled][gpu][isolation]") {
  const auto data = gpu_data::make(1 << 16);
  if (!data) return;
  REQUIRE(cotune::knobs().autotuning.isolate.get() == "on"); // the default
  auto& [cache, d, xs, x, y, n] = *data;
  const cuda::compiled_backend<cotune_test::scale_signature> backend{cotune_test::trap_kernels()};
  scale_tuner tuner{backend.source("compiled_trap"), backend.configs(), scale_options(), backend};
  const auto& result = tuner.tune_now(x, y, n);
  REQUIRE(result.candidates.size() == 2);
  INFO(result.candidates[0].reason << " / " << result.candidates[1].reason);
  CHECK(result.candidates[0].status == cotune::candidate_status::ok);
  CHECK(result.candidates[1].status == cotune::candidate_status::crashed);
  CHECK(result.winner == 0);
  // The parent's context is intact: the winner runs here.
  y.zero();
  tuner(x, y, n);
  backend.synchronize(d);
  CHECK(data->scaled());
}

#endif
