// Tests of cotune::cuda::availability(): what this process can do with CUDA, as a report.

#include <string>

#include <catch2/catch.hpp>

#include <cotune/cuda/availability.hpp>

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;

TEST_CASE("NVRTC is found on this machine without any setting", "[cuda][availability]") {
  auto r = cuda::availability();
  INFO(r.text());
  CHECK(r.can_compile());
  CHECK_FALSE(r.nvrtc_version.empty());
  CHECK_FALSE(r.nvrtc_path.empty());
}

TEST_CASE("a wrong COTUNE_LIBCUDA_PATH is reported, not thrown", "[cuda][availability]") {
  cotune_test::scoped_env env("COTUNE_LIBCUDA_PATH", "/nonexistent/libcuda.so.1");
  cuda::availability_report r;
  REQUIRE_NOTHROW(r = cuda::availability());
  CHECK_FALSE(r.driver_loaded);
  CHECK_FALSE(r.can_run());
  CHECK(r.device_count == 0);
  CHECK(r.driver_path == "/nonexistent/libcuda.so.1");
  CHECK_THAT(r.message, Catch::Contains("/nonexistent/libcuda.so.1"));
  CHECK_THAT(r.message, Catch::Contains("COTUNE_LIBCUDA_PATH"));
  CHECK_THAT(r.text(), Catch::Contains("CUDA driver: not loaded"));
}

TEST_CASE("a wrong COTUNE_LIBNVRTC_PATH is reported, not thrown", "[cuda][availability]") {
  cotune_test::scoped_env env("COTUNE_LIBNVRTC_PATH", "/nonexistent/libnvrtc.so.13");
  auto r = cuda::availability();
  CHECK_FALSE(r.can_compile());
  CHECK_THAT(r.message, Catch::Contains("/nonexistent/libnvrtc.so.13"));
  CHECK_THAT(r.message, Catch::Contains("COTUNE_LIBNVRTC_PATH"));
}

TEST_CASE("without a GPU the report says why there are no devices", "[cuda][availability]") {
  auto r = cuda::availability();
  if (r.can_run()) {
    WARN("this machine has CUDA devices: " << r.text());
    return;
  }
  CHECK(r.device_count == 0);
  CHECK_FALSE(r.message.empty());
}
