// Tests for the GPU layer's shared compile and load helpers (cotune/gpu/rtc_compile.hpp, gpu/library_loader.hpp)
// that need no GPU: the macros a candidate sees, the errors a compile's outcome becomes, the binary's
// meta as the binary cache keeps it, the resource checks of a loaded kernel, and opening a runtime
// library from real files (a missing path, a real library that lacks the functions, one that has them).

#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cotune/gpu/library_loader.hpp>
#include <cotune/gpu/rtc_compile.hpp>

namespace gpu = cotune::gpu;
using cotune::config;
using cotune::launch_options;

namespace {

const gpu::rtc_names names{"cuda backend", "NVRTC", "13.0"};
const cotune::kernel_source kernel{.name = "saxpy", .code = "__global__ void saxpy() {}", .entry = "saxpy"};

} // namespace

TEST_CASE("a candidate sees its parameters, warps, stages, block and (on AMD) warp size as macros", "[rtc]") {
  const config c({{"BLOCK", 128}, {"MODE", "fast"}}, launch_options{.num_warps = 8, .num_stages = 2});
  std::vector<std::string> cuda, hip;
  gpu::add_config_macros(cuda, c, 32, false);
  gpu::add_config_macros(hip, c, 64, true);
  CHECK(cuda == std::vector<std::string>{"-DBLOCK=128", "-DMODE=fast", "-DCOTUNE_NUM_WARPS=8", "-DCOTUNE_NUM_STAGES=2",
                                         "-DCOTUNE_THREADS_PER_BLOCK=256", "-DCOTUNE_BLOCK_X=256", "-DCOTUNE_BLOCK_Y=1",
                                         "-DCOTUNE_BLOCK_Z=1"});
  CHECK(hip == std::vector<std::string>{"-DBLOCK=128", "-DMODE=fast", "-DCOTUNE_NUM_WARPS=8", "-DCOTUNE_NUM_STAGES=2",
                                        "-DCOTUNE_WARP_SIZE=64", "-DCOTUNE_THREADS_PER_BLOCK=512", "-DCOTUNE_BLOCK_X=512",
                                        "-DCOTUNE_BLOCK_Y=1", "-DCOTUNE_BLOCK_Z=1"});
  CHECK(gpu::split_options("  -O3   --use_fast_math -G ") == std::vector<std::string>{"-O3", "--use_fast_math", "-G"});
  CHECK(gpu::split_options("   ").empty());
}

TEST_CASE("a compile's outcome becomes the error that names the config, the target and the fix", "[rtc]") {
  const config c({{"BLOCK", 64}});
  gpu::rtc_output out;
  SECTION("past the deadline") {
    out.stopped = gpu::rtc_output::stop_cause::deadline;
    CHECK_THROWS_MATCHES(gpu::throw_if_stopped_or_crashed(out, names, kernel, c, "sm_90", 250), cotune::timeout_error,
                         Catch::Matchers::Predicate<cotune::timeout_error>([&](const auto& e) {
                           const std::string w = e.what();
                           return w.find("COTUNE_COMPILE_TIMEOUT_MS = 250 ms") != std::string::npos &&
                                  w.find("{" + c.text() + "}") != std::string::npos && w.find("sm_90") != std::string::npos;
                         }));
  }
  SECTION("stopped on request") {
    out.stopped = gpu::rtc_output::stop_cause::stop_request;
    CHECK_THROWS_WITH(gpu::throw_if_stopped_or_crashed(out, names, kernel, c, "sm_90", 0),
                      Catch::Contains("was cancelled"));
  }
  SECTION("the compiler crashed") {
    out.crashed = true;
    out.error = "killed by signal 11 (Segmentation fault)";
    CHECK_THROWS_AS(gpu::throw_if_stopped_or_crashed(out, names, kernel, c, "sm_90", 0), cotune::compiler_crashed);
    CHECK_THROWS_WITH(gpu::throw_if_stopped_or_crashed(out, names, kernel, c, "sm_90", 0),
                      Catch::Contains("NVRTC 13.0 crashed") && Catch::Contains("not an error in the kernel"));
  }
  SECTION("ran to its end: success or a compile error is for the caller") {
    CHECK_NOTHROW(gpu::throw_if_stopped_or_crashed(out, names, kernel, c, "sm_90", 0));
    out.error = "NVRTC_ERROR_COMPILATION";
    out.log = "saxpy.cu(1): error: identifier \"x\" is undefined";
    const auto e = gpu::does_not_compile(out, names, kernel, c, "sm_90", {"-arch=sm_90", "-DBLOCK=64"});
    CHECK(e.log() == out.log);
    CHECK_THAT(std::string(e.what()), Catch::Contains("with config {" + c.text() + "} does not compile for sm_90 with NVRTC 13.0") &&
                                          Catch::Contains("options: -arch=sm_90 -DBLOCK=64") &&
                                          Catch::Contains("is undefined"));
  }
  SECTION("a kernel name that would smuggle flags, or no entry") {
    CHECK_THROWS_WITH(gpu::check_kernel(names, {.name = "a -Dx", .code = "", .entry = "a"}),
                      Catch::Contains("must be a C identifier"));
    CHECK_THROWS_WITH(gpu::check_kernel(names, {.name = "a", .code = "", .entry = ""}), Catch::Contains("has no entry"));
  }
}

TEST_CASE("a binary's meta reads back, with or without the PTX flag, and refuses anything else", "[rtc]") {
  const gpu::rtc_meta m{"_Z5saxpyv", "sm_90", "warning: unused \"x\"\n", true};
  const auto back = gpu::rtc_meta::from_json(m.json());
  REQUIRE(back);
  CHECK(back->lowered_name == m.lowered_name);
  CHECK(back->arch == m.arch);
  CHECK(back->log == m.log);
  CHECK(back->is_ptx);
  const auto hip = gpu::rtc_meta::from_json(R"({"lowered_name": "_Z5saxpyv", "arch": "gfx90a", "log": ""})");
  REQUIRE(hip);
  CHECK_FALSE(hip->is_ptx);
  CHECK_FALSE(gpu::rtc_meta::from_json(R"({"lowered_name": "_Z5saxpyv", "arch": "gfx90a"})"));
  CHECK_FALSE(gpu::rtc_meta::from_json(R"({"lowered_name": "x", "arch": "y", "log": "", "is_ptx": "yes"})"));
  CHECK_FALSE(gpu::rtc_meta::from_json("not json"));
}

TEST_CASE("a loaded kernel's resources are checked, each failure naming the resource and the limit", "[rtc]") {
  const config c({{"BLOCK", 64}});
  const cotune::launch_limits limits{{1024, 1024, 64}, 1024, {2147483647, 65535, 65535}};
  const gpu::device_resources d{1024, std::int64_t{65536}, 48 * 1024, "shared memory"};
  auto check = [&](gpu::kernel_resources k, cotune::block_dims b) {
    gpu::check_loaded_kernel(names.backend, c, k, d, b, limits);
  };
  CHECK_NOTHROW(check({256, 32, 1024, 1024}, {256, 1, 1}));
  CHECK_THROWS_AS(check({0, 32, 1024, 0}, {0, 1, 1}), cotune::launch_error);
  CHECK_THROWS_WITH(check({0, 32, 1024, 0}, {0, 1, 1}), Catch::Contains("cuda backend: config {BLOCK: 64, num_warps: 4") && Catch::Contains("asks for 0 threads per block"));
  auto resource = [&](gpu::kernel_resources k, cotune::block_dims b) -> std::string {
    try {
      check(k, b);
    } catch (const cotune::out_of_resources& e) {
      return e.resource() + " " + std::to_string(e.required()) + "/" + std::to_string(e.limit());
    }
    return "none";
  };
  CHECK(resource({2048, 8, 2048, 0}, {2048, 1, 1}) == "threads per block 2048/1024");
  CHECK(resource({1024, 128, 1024, 0}, {1024, 1, 1}) == "registers 131072/65536");
  CHECK(resource({512, 32, 256, 0}, {512, 1, 1}) == "threads per block (at 32 registers per thread) 512/256");
  CHECK(resource({256, 32, 1024, 64 * 1024}, {256, 1, 1}) == "shared memory 65536/49152");
  // No register limit given (HIP): only the kernel's own limit counts; the LDS is named as such.
  const gpu::device_resources amd{1024, std::nullopt, 64 * 1024, "shared memory (LDS)"};
  CHECK_NOTHROW(gpu::check_loaded_kernel(names.backend, c, {1024, 128, 1024, 0}, amd, {1024, 1, 1}, limits));
  CHECK_THROWS_WITH(gpu::check_loaded_kernel(names.backend, c, {256, 8, 1024, 70000}, amd, {256, 1, 1}, limits),
                    Catch::Contains("shared memory (LDS)"));
}

TEST_CASE("launch arguments are packed as their kernel_arg values, and a refused launch is named", "[rtc]") {
  int n = 7;
  double scale = 0.5;
  std::vector<void*> seen;
  gpu::with_kernel_params(
      [&](void** params) {
        for (void** p = params; *p; ++p) seen.push_back(*p);
        CHECK(*static_cast<int*>(params[0]) == 7);
        CHECK(*static_cast<double*>(params[1]) == 0.5);
      },
      n, scale);
  CHECK(seen.size() == 2);
  const cotune::launch_grid g{.x = 4, .y = 2, .z = 1, .shared_bytes = 1024};
  CHECK(gpu::launch_text("saxpy", "BLOCK: 64", g, {64, 1, 1}) ==
        "launching kernel 'saxpy' with config {BLOCK: 64} (grid 4x2x1, block 64x1x1, 1024 bytes of dynamic shared memory)");
}

namespace {

struct fake_library {
  void* handle;
  std::string path;
  void* cos = nullptr;
  ~fake_library() { ::dlclose(handle); }
};

} // namespace

TEST_CASE("a runtime library is opened from the first path that has every function", "[rtc][library]") {
  auto make = [](void* h, const std::string& p) { return std::unique_ptr<fake_library>(new fake_library{h, p}); };
  auto wants = [](const char* symbol) {
    return [symbol](fake_library& lib, void* h) {
      std::string missing;
      lib.cos = ::dlsym(h, symbol);
      if (!lib.cos) gpu::add_missing(missing, symbol);
      return missing;
    };
  };
  std::string tried;
  // libm has cos but no nvrtcVersion: the first path does not exist, the second lacks the function.
  auto none = gpu::open_first<fake_library>({"/nonexistent/libnvrtc.so", "libm.so.6"}, tried, make,
                                            wants("nvrtcVersion"), "(too old?)");
  CHECK_FALSE(none);
  CHECK_THAT(tried, Catch::Contains("/nonexistent/libnvrtc.so: ") && Catch::Contains("libm.so.6: lacks nvrtcVersion (too old?)"));
  tried.clear();
  auto lib = gpu::open_first<fake_library>({"/nonexistent/libm.so", "libm.so.6"}, tried, make, wants("cos"));
  REQUIRE(lib);
  CHECK(lib->path == "libm.so.6");
  CHECK(lib->cos != nullptr);
  CHECK_THAT(tried, Catch::Contains("/nonexistent/libm.so"));
  std::string list;
  gpu::add_missing(list, "a");
  gpu::add_missing(list, "b");
  CHECK(list == "a, b");
}
