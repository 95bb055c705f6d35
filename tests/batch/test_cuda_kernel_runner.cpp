// CUDA kernels in a job: example 04's GEMM job expands without a GPU, a CUDA kernel on a machine
// without a CUDA device fails its keys with the reason (never a crash), a backend this run cannot use
// says so, and (tagged [gpu], skipped without a device) a small CUDA job tunes end to end.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cotune/cache/file_cache.hpp>
#include <cotune/batch/job_runner.hpp>
#include <cotune/batch/job_spec.hpp>
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/device.hpp>
#include <cotune/batch/cuda_kernel_runner.hpp>
#endif

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

namespace cj = cotune::batch;

namespace {

/// Example 04's GEMM job, in the source tree the test runs from (found at run time, not compiled in).
std::filesystem::path gemm_job() { return cotune_test::source_file("examples/jobs/gemm_cuda.json"); }

/// A y = a * x + y kernel: the block size is the tuned parameter, y is restored around each run.
const char* axpy_job = R"json({
  "name": "axpy-cuda",
  "bench": {"warmup_ms": 2, "rep_ms": 5},
  "kernels": [
    {
      "name": "axpy",
      "backend": "cuda",
      "code": "extern \"C\" __global__ void axpy(const float* x, float* y, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }",
      "space": {"axes": {"num_warps": [1, 2, 4, 8]}},
      "geometry": {"grid": "cdiv(n, num_warps * 32)"},
      "arguments": [
        {"name": "x", "buffer": "float32", "extent": "n", "fill": "random", "seed": 7},
        {"name": "y", "buffer": "float32", "extent": "n", "fill": "ones", "restore": true},
        {"name": "a", "scalar": "float32", "value": 0.5},
        {"name": "n_", "scalar": "int32", "value": "n"}
      ],
      "key": ["n_"],
      "instances": {"n": [1000, 100000]}
    }
  ]
}
)json";

/// Counts the devices each tuning measured on (tuning_started events).
class device_counter final : public cotune::observer {
public:
  std::vector<std::size_t> devices;

protected:
  void on_event(const cotune::tuning_event& e) override {
    if (const auto* s = std::get_if<cotune::tuning_started>(&e)) {
      std::lock_guard lock(mutex_);
      devices.push_back(s->devices);
    }
  }

private:
  std::mutex mutex_;
};

/// Runs a job with `Runners`, collecting every key's report.
template <template <class> class... Runners>
std::pair<cj::job_summary, std::vector<cj::key_report>> run(const cj::job_spec& job,
                                                            std::shared_ptr<cotune::observer> watch = nullptr) {
  std::vector<cj::key_report> reports;
  cj::run_options o;
  if (watch) o.observers = {watch};
  o.on_key = [&](const cj::key_report& r) { reports.push_back(r); };
  auto sum = cj::run_job<cotune::file_cache, Runners...>(job, o);
  return {sum, reports};
}

} // namespace

TEST_CASE("example 04's GEMM job expands to three keys of sixteen candidates without a GPU", "[job][cuda_kernel_runner]") {
  const auto job = cj::job_spec::load(gemm_job());
  REQUIRE(job.kernels.size() == 1);
  const auto& k = job.kernels[0];
  CHECK(k.backend == "cuda");
  CHECK(k.source.entry == "gemm_fp16");
  CHECK(k.source.code.find("gemm_fp16(const __half*") != std::string::npos);
  CHECK(job.instance_count() == 3);
  CHECK(k.configs().size() == 48);
  for (const auto& inst : k.instances) CHECK(k.candidates(inst).size() == 16);
  CHECK(cj::key_text(k.arguments_for(k.instances[0])) == "A: float16, B: float16, C: float32, M=1024, N=1024, K=1024");
  // The largest instance's grid for a 128 x 64 tile, and example 04's shared memory for the config.
  const auto& big = k.instances[2];
  bool found = false;
  for (const auto& c : k.candidates(big)) {
    if (c.at("BLOCK_M").as_int() != 128 || c.at("BLOCK_N").as_int() != 64 || c.at("BLOCK_K").as_int() != 32) continue;
    found = true;
    const auto g = k.grid_for(c, big);
    CHECK(g.x == 64);
    CHECK(g.y == 32);
    const int stages = c.launch().num_stages;
    CHECK((c.launch().num_warps == 4 ? stages == 3 : stages == 4)); // example 04's (BLOCK_K, warps, stages) pairs
    CHECK(g.shared_bytes == static_cast<unsigned>(stages * (128 * (32 + 8) + 32 * (64 + 8)) * 2));
  }
  CHECK(found);
}

TEST_CASE("a kernel whose backend this run cannot use fails each of its keys, naming the kernel and the backend",
          "[job][cuda_kernel_runner]") {
  std::string text = axpy_job;
  const std::string hip = std::string(text).replace(text.find("\"backend\": \"cuda\""), 17, "\"backend\": \"hip\"");
  cotune_test::private_cache cache;
  {
    const auto [sum, reports] = run<>(cj::job_spec::parse(hip, "hip.json"));
    CHECK(sum.keys == 2);
    CHECK(sum.failed == 2);
    CHECK_FALSE(sum.all_tuned());
    REQUIRE(reports.size() == 2);
    for (const auto& r : reports) {
      CHECK(r.outcome == cj::key_outcome::failed);
      CHECK_THAT(r.error, Catch::StartsWith("hip.json:5:") && Catch::Contains("kernel 'axpy' has backend 'hip'") &&
                              Catch::Contains("no HIP device here"));
      CHECK(r.key_text == (r.index == 0 ? "x: float32, y: float32, n_=1000" : "x: float32, y: float32, n_=100000"));
    }
  }
  {
    const auto [sum, reports] = run<>(cj::job_spec::parse(axpy_job, "cuda.json"));
    CHECK(sum.failed == 2);
    for (const auto& r : reports)
      CHECK_THAT(r.error, Catch::Contains("kernel 'axpy' has backend 'cuda'") && Catch::Contains("built without CUDA"));
  }
}

#ifdef COTUNE_HAS_CUDA

TEST_CASE("without a CUDA device a CUDA kernel's keys fail with the reason while host kernels tune",
          "[job][cuda_kernel_runner]") {
  if (!cotune::cuda::devices().empty()) {
    SUCCEED("a CUDA device is present: the no-device path cannot be taken here");
    return;
  }
  // The axpy job, plus a host kernel that tunes on this machine.
  std::string text = axpy_job;
  text.replace(text.rfind("  ]\n}"), 5, R"json(  ,{
      "name": "fill_host",
      "code": "extern \"C\" void fill_host(float* y, int n) { for (int i = 0; i < n; ++i) y[i] = 1.0f; }",
      "arguments": [{"name": "y", "buffer": "float32", "extent": "n"}, {"name": "n", "scalar": "int32", "value": "n"}],
      "key": ["n"],
      "instances": {"n": [64]}
    }
  ]
})json");
  const auto job = cj::job_spec::parse(text, "mixed.json");
  cotune_test::private_cache cache;
  const auto [sum, reports] = run<cj::cuda_kernel_runner>(job);
  CHECK(sum.keys == 3);
  CHECK(sum.measured == 1);
  CHECK(sum.failed == 2);
  CHECK_FALSE(sum.all_tuned());
  REQUIRE(reports.size() == 3);
  for (const auto& r : reports) {
    if (r.kernel == "fill_host") {
      CHECK(r.outcome == cj::key_outcome::measured);
      continue;
    }
    CHECK(r.outcome == cj::key_outcome::failed);
    CHECK_THAT(r.error, Catch::StartsWith("mixed.json:5:") &&
                            Catch::Contains("kernel 'axpy' (backend cuda) cannot be tuned here: no CUDA device") &&
                            Catch::Contains("NVIDIA GPU"));
  }
}

TEST_CASE("a small CUDA job tunes every key on the local devices, then reads them from the cache",
          "[job][cuda_kernel_runner][gpu]") {
  if (cotune::cuda::devices().empty()) {
    SUCCEED("no CUDA device: skipped");
    return;
  }
  const auto job = cj::job_spec::parse(axpy_job, "axpy.json");
  cotune_test::private_cache cache;
  // Every device of device 0's model measures part of each key's candidates.
  const auto all = cotune::cuda::devices();
  std::size_t same = 0;
  for (const auto& d : all) same += cotune::cuda::interchangeable(d, all.front()) ? 1 : 0;
  {
    auto counter = std::make_shared<device_counter>();
    const auto [sum, reports] = run<cj::cuda_kernel_runner>(job, counter);
    CHECK(counter->devices == std::vector<std::size_t>{same, same});
    CHECK(sum.keys == 2);
    CHECK(sum.measured == 2);
    CHECK(sum.all_tuned());
    REQUIRE(reports.size() == 2);
    for (const auto& r : reports) {
      INFO(r.error);
      REQUIRE(r.result);
      CHECK(r.result->candidates.size() == 4);
      for (const auto& c : r.result->candidates) {
        INFO(c.reason);
        CHECK(c.status == cotune::candidate_status::ok);
      }
      CHECK_THAT(r.fingerprint, Catch::StartsWith("cuda;"));
      CHECK_FALSE(r.result->made.device.empty());
    }
  }
  const auto [again, reports] = run<cj::cuda_kernel_runner>(job);
  CHECK(again.cached == 2);
  CHECK(again.measured == 0);
}

TEST_CASE("a device argument pack passes buffers and scalars as the kernel's own parameters",
          "[job][cuda_kernel_runner][gpu]") {
  const auto devices = cotune::cuda::devices();
  if (devices.empty()) {
    SUCCEED("no CUDA device: skipped");
    return;
  }
  cotune_test::private_cache cache;
  const auto job = cj::job_spec::parse(axpy_job, "axpy.json");
  const auto& k = job.kernels[0];
  const auto& inst = k.instances[0]; // n = 1000: the last block is partial
  auto args = k.arguments_for(inst);
  args[1].reset = true;
  const cj::job_cuda_backend backend;
  const auto cfg = k.candidates(inst).at(2); // 4 warps: 8 blocks of 128 threads
  const auto grid = k.grid_for(cfg, inst);
  CHECK(grid.x == 8);

  for (const auto& d : devices) { // on every device, with its own copy
    cj::device_argument_pack pack(args, 0, devices[0]);
    if (d.ordinal != devices[0].ordinal) pack = pack.on(d);
    const auto on_d = backend.load(backend.compile(k.source, cfg, d), k.source, cfg, d);
    backend.launch(on_d, grid, pack);
    const auto x = pack.copy_to_host(0), y = pack.copy_to_host(1);
    const cj::argument_pack host(args); // the same fills on the host
    std::vector<float> hx(1000), hy(1000);
    std::memcpy(hx.data(), x.data(), 4000);
    std::memcpy(hy.data(), y.data(), 4000);
    CHECK(std::memcmp(hx.data(), host.data(0), 4000) == 0);
    bool right = true;
    for (std::size_t i = 0; i < 1000; ++i) right = right && hy[i] == 0.5f * hx[i] + 1.0f;
    CHECK(right);
    // y is marked reset (zero) and restore (snapshot, restore), on the device's stream.
    const auto snap = pack.snapshot();
    REQUIRE(snap.size() == 1);
    pack.zero();
    CHECK(pack.copy_to_host(1) == std::vector<std::byte>(4000));
    pack.restore(snap);
    CHECK(pack.copy_to_host(1) == y);
  }
}

#endif
