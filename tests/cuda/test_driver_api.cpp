// Tests of the run-time loading of the CUDA driver. This machine may have no driver: then the
// default library does not load, and everything must still be a message, never a crash or a throw.

#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <cotune/cuda/device.hpp>
#include <cotune/cuda/driver_api.hpp>

#include "../support/temp_dir.hpp"

namespace cuda = cotune::cuda;

TEST_CASE("a driver library that does not exist is a message naming it and the knob", "[cuda][driver_api]") {
  std::string why;
  auto lib = cuda::driver_library::open("/nonexistent/libcuda.so.1", why);
  CHECK(lib == nullptr);
  CHECK_THAT(why, Catch::Contains("/nonexistent/libcuda.so.1"));
  CHECK_THAT(why, Catch::Contains("COTUNE_LIBCUDA_PATH"));
}

TEST_CASE("a library that is not the driver is refused, naming the missing functions", "[cuda][driver_api]") {
  std::string why;
  // libm loads but has none of the driver's functions.
  auto lib = cuda::driver_library::open("libm.so.6", why);
  CHECK(lib == nullptr);
  CHECK_THAT(why, Catch::Contains("cuInit"));
  CHECK_THAT(why, Catch::Contains("cuMemAlloc_v2")); // the versioned symbol cuda.h names
}

TEST_CASE("a wrong COTUNE_LIBCUDA_PATH means no devices and a clear error, never a throw from devices()",
          "[cuda][driver_api]") {
  cotune_test::scoped_env env("COTUNE_LIBCUDA_PATH", "/nonexistent/dir/libcuda.so.1");
  CHECK(cuda::try_driver() == nullptr);
  CHECK_THAT(cuda::driver_error(), Catch::Contains("/nonexistent/dir/libcuda.so.1"));
  CHECK(cuda::devices().empty());
  CHECK_THROWS_WITH(cuda::driver(), Catch::Contains("COTUNE_LIBCUDA_PATH"));
}

TEST_CASE("the default driver either loads or explains why", "[cuda][driver_api]") {
  if (const auto* lib = cuda::try_driver()) {
    CHECK(lib->version() > 0);
    CHECK(cuda::driver_error().empty());
    CHECK(static_cast<int>(cuda::devices().size()) <= lib->device_count());
  } else {
    CHECK_FALSE(cuda::driver_error().empty());
    CHECK(cuda::devices().empty());
  }
}

TEST_CASE("sticky errors are told apart from recoverable ones", "[cuda][driver_api]") {
  static_assert(cuda::is_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS));
  static_assert(cuda::is_sticky_error(CUDA_ERROR_LAUNCH_FAILED));
  static_assert(cuda::is_sticky_error(CUDA_ERROR_MISALIGNED_ADDRESS));
  static_assert(!cuda::is_sticky_error(CUDA_ERROR_OUT_OF_MEMORY));
  static_assert(!cuda::is_sticky_error(CUDA_ERROR_INVALID_VALUE));
  static_assert(!cuda::is_sticky_error(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  CHECK(cuda::is_sticky_error(CUDA_ERROR_ASSERT));
  CHECK_FALSE(cuda::is_sticky_error(CUDA_SUCCESS));
}

TEST_CASE("a device's context is made current on any thread", "[cuda][driver_api][gpu]") {
  const auto* lib = cuda::try_driver();
  if (!lib || lib->device_count() == 0) {
    WARN("skipped: no CUDA device here");
    return;
  }
  const auto& ctx = lib->context(0);
  CHECK(&lib->context(0) == &ctx); // created once
  CHECK(ctx.stream() != nullptr);
  CUcontext seen = nullptr;
  std::thread([&] {
    ctx.make_current();
    lib->api().ctx_get_current(&seen);
  }).join();
  CHECK(seen == ctx.context());
  CHECK_THROWS_AS(lib->context(lib->device_count()), cotune::error);
}
