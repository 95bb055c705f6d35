// Tests of the run-time loading of NVRTC and of one compilation through it (no GPU needed).

#include <chrono>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cotune/cuda/nvrtc_api.hpp>

namespace cuda = cotune::cuda;

namespace {

/// A kernel NVRTC needs seconds to compile (1.3 s for 20000 lines on the build machine): a compile
/// process is surely still running when it is told to stop.
std::string slow_kernel(int lines = 40000) {
  std::string src = "extern \"C\" __global__ void slow(float* x) {\n  float v = x[threadIdx.x];\n";
  for (int i = 0; i < lines; ++i) src += "  v = v * v + " + std::to_string(i) + ".5f;\n";
  return src + "  x[threadIdx.x] = v;\n}\n";
}

} // namespace

TEST_CASE("NVRTC loads and reports its version, architectures and headers", "[cuda][nvrtc_api]") {
  cuda::preload_nvrtc();
  const auto& nv = cuda::nvrtc();
  CHECK(nv.major() >= 11);
  CHECK(nv.version_text() == std::to_string(nv.major()) + "." + std::to_string(nv.minor()));
  CHECK(nv.supports(90));
  CHECK_FALSE(nv.supports(10));
  CHECK(std::filesystem::exists(nv.toolkit_include_dir() / "cuda_fp16.h"));
}

TEST_CASE("a compilation returns a cubin and the lowered name of a name expression", "[cuda][nvrtc_api]") {
  const auto& nv = cuda::nvrtc();
  const auto before = nv.compilations();
  auto out = nv.compile("template <class T> __global__ void k(T* x) { x[threadIdx.x] = T(1); }\n", "k.cu",
                        {"-arch=sm_90"}, "k<float>");
  INFO(out.error << "\n" << out.log);
  REQUIRE(out.ok);
  CHECK_FALSE(out.is_ptx);
  CHECK(out.lowered_name == "_Z1kIfEvPT_");
  CHECK(nv.compilations() == before + 1);
}

TEST_CASE("toolkit headers are found through the toolkit include directory", "[cuda][nvrtc_api]") {
  const auto& nv = cuda::nvrtc();
  auto out = nv.compile("#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half* x) { x[0] = __float2half(1.0f); }\n",
                        "h.cu", {"-arch=sm_90", "--include-path=" + nv.toolkit_include_dir().string()}, "h");
  INFO(out.error << "\n" << out.log);
  CHECK(out.ok);
}

TEST_CASE("a failed compilation returns the log", "[cuda][nvrtc_api]") {
  auto out = cuda::nvrtc().compile("__global__ void k( {\n", "bad.cu", {"-arch=sm_90"}, "k");
  CHECK_FALSE(out.ok);
  CHECK(out.error == "NVRTC_ERROR_COMPILATION");
  CHECK_THAT(out.log, Catch::Contains("bad.cu"));
}

TEST_CASE("libraries that are not NVRTC are refused with every path tried", "[cuda][nvrtc_api]") {
  std::string why;
  auto lib = cuda::nvrtc_library::open({"/nonexistent/libnvrtc.so", "libm.so.6"}, why);
  CHECK(lib == nullptr);
  CHECK_THAT(why, Catch::Contains("/nonexistent/libnvrtc.so"));
  CHECK_THAT(why, Catch::Contains("libm.so.6: lacks nvrtcVersion"));
  CHECK_THAT(why, Catch::Contains("COTUNE_LIBNVRTC_PATH"));
}

TEST_CASE("a compilation runs in a compile process unless the knob says otherwise, with the same result",
          "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  const auto& nv = cuda::nvrtc();
  const std::string src = "extern \"C\" __global__ void same(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  const auto in_processes = nv.process_compilations();
  auto forked = nv.compile(src, "same.cu", {"-arch=sm_90"}, "same");
  REQUIRE(forked.ok);
  CHECK(nv.process_compilations() == in_processes + 1);
  const pid_t server = nv.compile_server_pid();
  CHECK(server > 0);
  CHECK(server != ::getpid());
  CHECK(::kill(server, 0) == 0);
  auto scope = cuda::cuda_knobs().compile_processes.scoped(false);
  auto here = nv.compile(src, "same.cu", {"-arch=sm_90"}, "same");
  REQUIRE(here.ok);
  CHECK(nv.process_compilations() == in_processes + 1);
  CHECK(here.image == forked.image);
  CHECK(here.lowered_name == forked.lowered_name);
  CHECK(here.log == forked.log);
}

TEST_CASE("a compilation past its deadline is killed midway and says so", "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  const auto& nv = cuda::nvrtc();
  // 300 ms: the compile has started by then, and needs seconds more.
  auto out = nv.compile(slow_kernel(), "slow.cu", {"-arch=sm_90"}, "slow",
                        std::chrono::steady_clock::now() + std::chrono::milliseconds(300));
  CHECK_FALSE(out.ok);
  CHECK(out.stopped == cuda::nvrtc_output::stop_cause::deadline);
  CHECK_THAT(out.error, Catch::Contains("deadline"));
  CHECK(out.image.empty());
  // The server goes on serving.
  CHECK(nv.compile("extern \"C\" __global__ void k() {}\n", "k.cu", {"-arch=sm_90"}, "k").ok);
}

TEST_CASE("a stop request kills a compilation midway", "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  auto out = cuda::nvrtc().compile(slow_kernel(), "slow.cu", {"-arch=sm_90"}, "slow",
                                   std::chrono::steady_clock::time_point::max(), stop.get_token());
  stopper.join();
  CHECK_FALSE(out.ok);
  CHECK(out.stopped == cuda::nvrtc_output::stop_cause::stop_request);
}

TEST_CASE("compiles go on after the compile server is killed", "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  const auto& nv = cuda::nvrtc();
  const std::string src = "extern \"C\" __global__ void again() {}\n";
  REQUIRE(nv.compile(src, "again.cu", {"-arch=sm_90"}, "again").ok);
  const pid_t first = nv.compile_server_pid();
  REQUIRE(first > 0);
  REQUIRE(::kill(first, SIGKILL) == 0);
  // The warm compile processes outlive their server; a new server is forked when a new process is
  // needed (tests/detail/test_fork_server.cpp checks that part).
  for (int i = 0; i < 3; ++i) {
    auto out = nv.compile(src, "again.cu", {"-arch=sm_90"}, "again");
    INFO(out.error);
    CHECK(out.ok);
  }
}

TEST_CASE("compiles run in warm compile processes that serve many compiles", "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  const auto& nv = cuda::nvrtc();
  REQUIRE(nv.start_compile_server());
  const auto warm_before = nv.warm_compilations();
  for (int i = 0; i < 4; ++i) {
    auto out = nv.compile("extern \"C\" __global__ void w(float* x) { x[0] = " + std::to_string(i) + "; }\n", "w.cu",
                          {"-arch=sm_90"}, "w");
    INFO(out.error);
    REQUIRE(out.ok);
  }
  CHECK(nv.warm_compilations() == warm_before + 4);
  CHECK(nv.warm_processes() >= 1);
}

TEST_CASE("the compile server can be started before any compile", "[cuda][nvrtc_api]") {
  auto on = cuda::cuda_knobs().compile_processes.scoped(true);
  const auto& nv = cuda::nvrtc();
  const auto before = nv.compilations();
  CHECK(nv.start_compile_server());
  const pid_t server = nv.compile_server_pid();
  CHECK(server > 0);
  CHECK(::kill(server, 0) == 0);
  CHECK(nv.compilations() == before);
  CHECK(nv.start_compile_server()); // once started, it stays
  CHECK(nv.compile_server_pid() == server);
  auto off = cuda::cuda_knobs().compile_processes.scoped(false);
  CHECK_FALSE(nv.start_compile_server());
}
