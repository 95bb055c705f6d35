// Tests for what the GPU runtimes' libraries and contexts share (cotune/gpu/runtime_library.hpp): a
// failed call's error, waiting with a deadline, listing devices and their limits, and the library
// each key loads once. None needs a GPU.

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <cotune/gpu/runtime_library.hpp>

namespace {

struct fake_library { // what list_devices and library_for ask of a runtime's library
  int devices = 0;
  [[nodiscard]] int device_count() const noexcept { return devices; }
  static inline int opened = 0;
  static std::unique_ptr<fake_library> open(const std::string& key, std::string& why) {
    ++opened;
    if (key == "missing") {
      why = "libmissing.so: cannot open shared object file";
      return nullptr;
    }
    return std::make_unique<fake_library>(fake_library{3});
  }
};

struct fake_device {
  std::array<int, 3> max_block_dims{1024, 512, 64};
  int max_threads_per_block = 1024;
  std::array<int, 3> max_grid_dims{2147483647, 65535, 65535};
};

} // namespace

TEST_CASE("a failed runtime call names the call, the device and the error, and a sticky one says what is lost",
          "[gpu][runtime_library]") {
  CHECK_THROWS_MATCHES(cotune::gpu::throw_call_failed("CUDA", 1, "cuMemAlloc of 64 bytes", "CUDA_ERROR_X (x)", false),
                       cotune::launch_error,
                       Catch::Message("cuMemAlloc of 64 bytes on CUDA device 1 failed: CUDA_ERROR_X (x)"));
  CHECK_THROWS_WITH(cotune::gpu::throw_call_failed("HIP", 0, "hipMemcpy", "bad", true),
                    Catch::Contains("HIP device 0 failed: bad") && Catch::Contains("sticky") &&
                        Catch::Contains("the HIP context of device 0 is lost") && Catch::Contains("restart the process"));
}

TEST_CASE("waiting polls until done, and past the deadline is a timeout naming the work and the device",
          "[gpu][runtime_library]") {
  int polls = 0;
  cotune::gpu::poll_until_done([&] { return ++polls == 3; }, std::chrono::steady_clock::now() + std::chrono::seconds(5),
                               "CUDA", 0, "the first run");
  CHECK(polls == 3);
  CHECK_THROWS_MATCHES(cotune::gpu::poll_until_done([] { return false; },
                                                    std::chrono::steady_clock::now() + std::chrono::milliseconds(5),
                                                    "HIP", 2, "the first run"),
                       cotune::timeout_error,
                       Catch::Matchers::Predicate<cotune::timeout_error>([](const cotune::timeout_error& e) {
                         const std::string m = e.what();
                         return m.find("the first run on HIP device 2") != std::string::npos &&
                                m.find("COTUNE_BENCH_TIMEOUT_MS") != std::string::npos;
                       }));
  // A failure the query reports ends the wait with its own error.
  CHECK_THROWS_AS(cotune::gpu::poll_until_done([]() -> bool { throw cotune::launch_error("lost"); },
                                               std::chrono::steady_clock::time_point::max(), "CUDA", 0, "sync"),
                  cotune::launch_error);
}

TEST_CASE("devices are listed in order, one that cannot be described is left out, none without a library",
          "[gpu][runtime_library]") {
  const fake_library lib{4};
  const auto ids = cotune::gpu::list_devices(&lib, [](const fake_library&, int i) {
    if (i == 2) throw cotune::error("device 2 is being reset");
    return i;
  });
  CHECK(ids == std::vector<int>{0, 1, 3});
  CHECK(cotune::gpu::list_devices(static_cast<const fake_library*>(nullptr), [](const fake_library&, int i) { return i; })
            .empty());
  const auto limits = cotune::gpu::limits_of(fake_device{});
  CHECK(limits.max_threads == 1024);
  CHECK(limits.max_block[1] == 512);
  CHECK(limits.max_grid[2] == 65535);
}

TEST_CASE("each library key is opened once per process and its outcome kept", "[gpu][runtime_library]") {
  const int before = fake_library::opened;
  // Named keys: a reference returned for a temporary argument makes g++ 13 warn (-Wdangling-reference).
  const std::string fake = "libfake.so", absent = "missing";
  const auto& a = cotune::gpu::library_for<fake_library>(fake);
  const auto& b = cotune::gpu::library_for<fake_library>(fake);
  CHECK(&a == &b);
  REQUIRE(a.library);
  CHECK(a.library->device_count() == 3);
  const auto& missing = cotune::gpu::library_for<fake_library>(absent);
  CHECK_FALSE(missing.library);
  CHECK(missing.message.find("cannot open") != std::string::npos);
  (void)cotune::gpu::library_for<fake_library>(absent);
  CHECK(fake_library::opened - before == 2);
}
