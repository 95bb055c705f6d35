// Tests of the run-time loading of NVRTC and of one compilation through it (no GPU needed).

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cuda/nvrtc_api.hpp>

namespace cuda = cotune::cuda;

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
