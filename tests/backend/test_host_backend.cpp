// Tests for cotune/backend/host_backend.hpp with the real compilers (g++ 12 and clang++ 14), real
// shared objects and a private file cache.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <cotune/backend/host_backend.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/core/buffer.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using cotune::config;
using cotune::host_backend;
using cotune::kernel_source;
using cotune::knobs;
using cotune_test::private_cache;
using cotune_test::scoped_env;
using namespace std::chrono_literals;

static_assert(cotune::Backend<host_backend>);
static_assert(cotune::LaunchableWith<host_backend, cotune::host_span<float>, int>);

namespace {

/// x[i] = x[i] * SCALE + OFFSET (negated when NEGATE), over TYPE elements: every kind of macro.
kernel_source affine_kernel() {
  return kernel_source{.name = "affine",
                       .code = R"(
extern "C" void affine(TYPE* x, int n) {
  for (int i = 0; i < n; ++i) {
    TYPE v = x[i] * SCALE + OFFSET;
    x[i] = NEGATE ? -v : v;
  }
}
)",
                       .entry = "affine"};
}

config affine_config(int scale = 3) { return config{{"SCALE", scale}, {"OFFSET", 0.5}, {"NEGATE", false}, {"TYPE", "float"}}; }

/// Fast flags, so that the many compiles below stay quick.
struct quick_flags {
  cotune::knob<std::string>::scope flags = knobs().build.cxxflags.scoped("-O1");
  scoped_env cxx{"CXX", std::nullopt};
  scoped_env env_flags{"COTUNE_HOST_CXXFLAGS", std::nullopt};
  scoped_env debug{"COTUNE_DEBUG", std::nullopt};
  scoped_env timeout{"COTUNE_COMPILE_TIMEOUT_MS", std::nullopt};
};

/// A unique macro name: it shows up in the compiler's command line, so /proc tells whether a compiler
/// process for this test is still alive.
std::string unique_marker(const char* what) {
  static std::atomic<int> counter{0};
  return fmt::format("COTUNE_TEST_{}_{}_{}", what, ::getpid(), ++counter);
}

/// True if a live process has `marker` in its command line (zombies have an empty one).
bool process_with_marker(const std::string& marker) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try { // a process that exits while it is read makes the read fail (ESRCH): it is gone, so not a match
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      cmdline.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    if (cmdline.find(marker) != std::string::npos) return true;
  }
  return false;
}

bool no_process_with_marker_soon(const std::string& marker) {
  for (int i = 0; i < 250 && process_with_marker(marker); ++i) std::this_thread::sleep_for(20ms);
  return !process_with_marker(marker);
}

/// A source whose compilation takes minutes: a constant expression of ~10^10 steps (GCC's limits raised).
kernel_source slow_kernel() {
  return kernel_source{.name = "slow",
                       .code = R"(
constexpr unsigned long long spin() {
  unsigned long long s = 0;
  for (unsigned long long i = 0; i < 10000000000ull; ++i) s += i ^ (s >> 3);
  return s;
}
constexpr unsigned long long result = spin();
extern "C" unsigned long long slow() { return result; }
)",
                       .entry = "slow",
                       .options = {"-fconstexpr-loop-limit=2147483647", "-fconstexpr-ops-limit=1000000000000000"}};
}

} // namespace

TEST_CASE("the host backend compiles and runs a real kernel with config values as -D macros",
          "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  REQUIRE(b.devices().size() == 1);
  const auto k = affine_kernel();
  const auto c = affine_config(3);
  const auto bin = b.compile(k, c, b.devices()[0]);
  CHECK(bin.image.substr(0, 4) == "\x7f" "ELF");
  CHECK(bin.path.empty()); // compile is pure: it stores nothing
  CHECK_FALSE(fs::exists(cache.cache_dir()));
  const auto fn = b.load(bin, k, c, b.devices()[0]); // from a process-private file
  REQUIRE(fn.symbol != nullptr);
  std::vector<float> x{1, 2, 3};
  cotune::host_span<float> span(x);
  int n = 3;
  b.launch(fn, cotune::launch_grid{}, span, n);
  CHECK(x == std::vector<float>{3.5f, 6.5f, 9.5f});

  auto negated = affine_config(2);
  negated.set("NEGATE", true);
  const auto bin2 = b.compile(k, negated);
  CHECK(bin2.image != bin.image);
  const auto fn2 = b.load(bin2, k, negated);
  std::vector<float> y{1, 2};
  cotune::host_span<float> yspan(y);
  int m = 2;
  b.launch(fn2, cotune::launch_grid{}, yspan, m);
  CHECK(y == std::vector<float>{-2.5f, -4.5f});
}

TEST_CASE("the compile command holds flags, options, include dirs and macros", "[backend][host_backend]") {
  quick_flags flags;
  host_backend b;
  auto k = affine_kernel();
  k.options = {"-DEXTRA=1", "-Wall"};
  k.include_dirs = {"/opt/inc"};
  const auto cc = cotune::resolve_host_compiler();
  const auto cmd = b.command(cc, k, affine_config(), "src.cpp", "out.so");
  const std::vector<std::string> expected{cc.path.string(), "-O1", "-shared", "-fPIC", "-DEXTRA=1", "-Wall", "-I/opt/inc",
                                          "-DNEGATE=0", "-DOFFSET=0.5", "-DSCALE=3", "-DTYPE=float",
                                          "src.cpp", "-o", "out.so"};
  CHECK(cmd == expected);
  auto debug = knobs().runtime.debug.scoped(true);
  const auto with_debug = b.command(cc, k, affine_config(), "src.cpp", "out.so");
  CHECK(std::find(with_debug.begin(), with_debug.end(), "-g") != with_debug.end());
}

TEST_CASE("a compile error carries the compiler's log and names the kernel and the config",
          "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  auto k = affine_kernel();
  k.name = "broken";
  k.code = "extern \"C\" void broken() { undeclared_identifier_xyz = BLOCK; }\n";
  k.entry = "broken";
  const config c{{"BLOCK", 64}};
  try {
    (void)b.compile(k, c);
    FAIL("no compile_error");
  } catch (const cotune::compile_error& e) {
    CHECK_THAT(e.log(), Catch::Contains("undeclared_identifier_xyz"));
    CHECK_THAT(e.log(), Catch::Contains("error"));
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("'broken'"));
    CHECK_THAT(what, Catch::Contains(c.params_text()));
    CHECK_THAT(what, !Catch::Contains("num_warps")); // a CPU kernel has no launch options to show
    CHECK_THAT(what, Catch::Contains("-DBLOCK=64"));
  }
  CHECK_FALSE(fs::exists(cache.cache_dir())); // nothing was stored
}

TEST_CASE("a CXX that does not exist is an error naming CXX", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  for (const char* missing : {"cotune-no-such-compiler", "/nonexistent/bin/c++"}) {
    scoped_env cxx("CXX", std::string(missing));
    CHECK_THROWS_WITH(b.compile(affine_kernel(), affine_config()),
                      Catch::Contains("CXX") && Catch::Contains(missing));
    CHECK_THROWS_WITH(cotune::resolve_host_compiler(), Catch::Contains("CXX"));
  }
  scoped_env cxx("CXX", std::string("/tmp")); // a directory is not a compiler
  CHECK_THROWS_WITH(cotune::resolve_host_compiler(), Catch::Contains("CXX"));
}

namespace {
/// A compiler wrapper script: answers --version like a compiler, then runs `body` for compiles.
fs::path compiler_script(const cotune_test::temp_dir& dir, const std::string& name, const std::string& body) {
  const auto path = dir.path() / name;
  std::ofstream(path) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'wrapper-cc 1.0'; exit 0; fi\n" << body << "\n";
  fs::permissions(path, fs::perms::owner_all);
  return path;
}
} // namespace

TEST_CASE("a compiler that dies by a signal or reports an internal error is a crash, not a compile error",
          "[backend][host_backend][crash]") {
  private_cache cache;
  quick_flags flags;
  cotune_test::temp_dir dir("cotune-cc");
  host_backend b;
  SECTION("killed by SIGSEGV") {
    scoped_env cxx("CXX", compiler_script(dir, "segv-cc", "kill -SEGV $$").string());
    try {
      (void)b.compile(affine_kernel(), affine_config());
      FAIL("expected compiler_crashed");
    } catch (const cotune::compiler_crashed& e) {
      CHECK_THAT(e.what(), Catch::Contains("killed by signal 11 (Segmentation fault)"));
      CHECK_THAT(e.what(), Catch::Contains("not an error in the kernel"));
      CHECK_THAT(e.what(), Catch::Contains("SCALE: 3"));
    }
  }
  SECTION("an internal compiler error, as g++ reports one") {
    scoped_env cxx("CXX", compiler_script(dir, "ice-cc",
                                          "echo 'k.cpp:2:1: internal compiler error: Segmentation fault' >&2\n"
                                          "echo 'Please submit a full bug report' >&2; exit 4")
                              .string());
    CHECK_THROWS_AS(b.compile(affine_kernel(), affine_config()), cotune::compiler_crashed);
    CHECK_THROWS_WITH(b.compile(affine_kernel(), affine_config()),
                      Catch::Contains("(internal compiler error: Segmentation fault)"));
  }
  SECTION("an ordinary error stays a compile error") {
    scoped_env cxx("CXX", compiler_script(dir, "err-cc", "echo 'k.cpp:2:1: error: expected ;' >&2; exit 1").string());
    try {
      (void)b.compile(affine_kernel(), affine_config());
      FAIL("expected compile_error");
    } catch (const cotune::compiler_crashed&) {
      FAIL("an ordinary error was reported as a crash");
    } catch (const cotune::compile_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("expected ;"));
    }
  }
}

TEST_CASE("a compile past the timeout throws timeout_error and leaves no compiler behind", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  cotune_test::temp_dir tmpdir("cotune-tmpdir");
  scoped_env tmp("TMPDIR", tmpdir.string()); // where the build directory and the compiler's files go
  host_backend b;
  auto timeout = knobs().autotuning.compile_timeout_ms.scoped(300);
  const auto marker = unique_marker("TIMEOUT");
  const config c{{marker, 1}};
  try {
    (void)b.compile(slow_kernel(), c);
    FAIL("no timeout_error");
  } catch (const cotune::timeout_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS=300"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("'slow'"));
    CHECK_THAT(std::string(e.what()), Catch::Contains(marker));
  }
  CHECK(no_process_with_marker_soon(marker));
  CHECK(fs::is_empty(tmpdir.path())); // no build directory, no compiler temporaries (cc*.s) left
}

TEST_CASE("a stop request cancels a compile", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  cotune_test::temp_dir tmpdir("cotune-tmpdir");
  scoped_env tmp("TMPDIR", tmpdir.string());
  host_backend b;
  const auto marker = unique_marker("STOP");
  const config c{{marker, 1}};
  std::stop_source source;
  std::jthread stopper([&] {
    // Wait until the compiler runs, so that the stop lands mid-compile.
    for (int i = 0; i < 500 && !process_with_marker(marker); ++i) std::this_thread::sleep_for(10ms);
    source.request_stop();
  });
  CHECK_THROWS_WITH(b.compile(slow_kernel(), c, {}, source.get_token()),
                    Catch::Contains("cancelled") && Catch::Contains("'slow'"));
  CHECK(no_process_with_marker_soon(marker));
  CHECK(fs::is_empty(tmpdir.path()));
}

TEST_CASE("kernel names must be C identifiers", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  auto k = affine_kernel();
  k.name = "../evil";
  CHECK_THROWS_WITH(b.compile(k, affine_config()), Catch::Contains("'../evil'") && Catch::Contains("C identifier"));
}

TEST_CASE("a fresh binary without the entry point is a launch error naming the symbol", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  auto k = affine_kernel();
  k.entry = "no_such_entry";
  const auto bin = b.compile(k, affine_config());
  CHECK_THROWS_WITH(b.load(bin, k, affine_config()),
                    Catch::Contains("no_such_entry") && Catch::Contains("'affine'") && Catch::Contains("SCALE: 3"));
}

TEST_CASE("include directories reach the compiler", "[backend][host_backend]") {
  private_cache cache;
  quick_flags flags;
  cotune_test::temp_dir inc;
  std::ofstream(inc.path() / "answer.h") << "#define ANSWER 42\n";
  host_backend b;
  const kernel_source k{.name = "answer",
                        .code = "#include \"answer.h\"\nextern \"C\" void answer(int* out) { *out = ANSWER + BIAS; }\n",
                        .entry = "answer",
                        .include_dirs = {inc.string()}};
  const config c{{"BIAS", 1}};
  const auto fn = b.load(b.compile(k, c), k, c);
  int out = 0;
  int* ptr = &out;
  b.launch(fn, cotune::launch_grid{}, ptr);
  CHECK(out == 43);
}

TEST_CASE("the binary's recipe names the compiler, the platform, every flag and macro, and the source",
          "[backend][host_backend]") {
  quick_flags flags;
  host_backend b;
  const auto cc = cotune::resolve_host_compiler();
  const auto r = b.binary_key(affine_kernel(), affine_config());
  CHECK(r.backend == "host");
  CHECK(r.file == "affine.so");
  CHECK_FALSE(r.has_meta);
  auto has = [&](const std::string& s) { return std::find(r.ingredients.begin(), r.ingredients.end(), s) != r.ingredients.end(); };
  CHECK(has(cc.path.string()));
  CHECK(has(cc.version));
  CHECK(has(cotune::detail::host_platform()));
  CHECK(has("-O1"));
  CHECK(has("-DSCALE=3"));
  CHECK(has(affine_kernel().digest()));
}

TEST_CASE("the host device has a name and a fingerprint naming the compiler", "[backend][host_backend]") {
  quick_flags flags;
  host_backend b;
  const auto d = b.devices().at(0);
  CHECK_THAT(b.device_name(d), Catch::StartsWith("host ("));
  const auto cc = cotune::resolve_host_compiler();
  CHECK_THAT(b.fingerprint(d), Catch::StartsWith("host;" + cc.path.string() + ";"));
  CHECK(cc.path.is_absolute());
}

// ---- module globals (tune_options::on_load) -----------------------------------------------------------

static_assert(cotune::FindsModuleGlobals<host_backend>);

namespace {

/// out[i] = table[i] * SCALE; `table` is a global the caller writes; `limits` is read-only data.
kernel_source table_kernel() {
  return kernel_source{.name = "table_scale",
                       .code = R"(
int table[4];
extern const int limits[2] = {1, 2};
extern "C" void table_scale(int* out) {
  for (int i = 0; i < 4; ++i) out[i] = table[i] * SCALE + limits[0] - 1;
}
)",
                       .entry = "table_scale"};
}

} // namespace

TEST_CASE("the host backend finds a loaded kernel's global variable, sized, and writes it",
          "[backend][host_backend][module]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  const auto k = table_kernel();
  const config c{{"SCALE", 10}};
  const auto fn = b.load(b.compile(k, c), k, c);
  const auto table = b.find_global(fn, "table");
  REQUIRE(table.has_value());
  CHECK(table->bytes == 4 * sizeof(int));

  const cotune::module_view m(c, k.name, b.device_name({}), 0, [&](std::string_view n) { return b.find_global(fn, n); });
  const auto span = m.global<int>("table");
  REQUIRE(span.size() == 4);
  span.copy_from(std::vector<int>{1, 2, 3, 4});
  CHECK(span.to_vector() == std::vector<int>{1, 2, 3, 4});
  span.subspan(3, 1).copy_from(std::vector<int>{7});
  std::vector<int> out(4, -1);
  cotune::host_span<int> out_span(out);
  b.launch(fn, cotune::launch_grid{}, out_span);
  CHECK(out == std::vector<int>{10, 20, 30, 70}); // the kernel read what was written

  CHECK_FALSE(b.find_global(fn, "no_such_global").has_value());
  CHECK_THROWS_WITH(m.global<int>("no_such_global"),
                    Catch::Contains("no global variable 'no_such_global'") && Catch::Contains("'table_scale'") &&
                        Catch::Contains("SCALE: 10") && Catch::Contains("global namespace scope"));
  CHECK_THROWS_WITH(b.find_global(fn, "table_scale"), Catch::Contains("'table_scale' is not a variable"));
  CHECK_THROWS_WITH(b.find_global(fn, "limits"), Catch::Contains("read-only memory"));
  CHECK_THROWS_WITH((m.global<std::array<int, 3>>("table").size()),
                    Catch::Contains("16 bytes, not a whole number of 12-byte"));
  CHECK_THROWS_WITH(span.copy_from(std::vector<int>{1, 2}), Catch::Contains("holds 4 elements, but 2 were given"));
  CHECK_THROWS_WITH(span.subspan(2, 3), Catch::Contains("out of range for 4 elements"));
}

TEST_CASE("a module_view made from the backend and a loaded function writes globals for a raw launch",
          "[backend][host_backend][module]") {
  private_cache cache;
  quick_flags flags;
  host_backend b;
  const auto k = table_kernel();
  const config c{{"SCALE", 10}};
  const auto fn = b.load(b.compile(k, c), k, c);

  const cotune::module_view m(b, fn, k.name); // no tuner: the backend and the function it loaded
  CHECK(m.cfg().params().empty());
  m.global<int>("table").copy_from(std::vector<int>{4, 3, 2, 1});
  std::vector<int> out(4, -1);
  cotune::host_span<int> out_span(out);
  b.launch(fn, cotune::launch_grid{}, out_span);
  CHECK(out == std::vector<int>{40, 30, 20, 10});
  CHECK_THROWS_WITH(m.global<int>("no_such_global"),
                    Catch::Contains("kernel '" + k.name + "'") && Catch::Contains("no global variable 'no_such_global'"));

  // The same data given as a module_constant (what tune_options::constants holds).
  const std::array<int, 4> data{5, 6, 7, 8};
  const cotune::module_constant table("table", data);
  CHECK(table.bytes.size() == sizeof(data));
  table.write_to(m);
  b.launch(fn, cotune::launch_grid{}, out_span);
  CHECK(out == std::vector<int>{50, 60, 70, 80});
  // A size that differs from the global's is refused with both sizes, before anything is written.
  CHECK_THROWS_WITH(cotune::module_constant("table", std::vector<int>{1, 2, 3}).write_to(m),
                    Catch::Contains("constant 'table': 12 bytes were given (3 elements of 4 bytes)") &&
                        Catch::Contains("holds 16 bytes") && Catch::Contains("give exactly 4 elements"));
  CHECK_THROWS_WITH(cotune::module_constant("table", 1.0).write_to(m), Catch::Contains("8 bytes were given"));
  b.launch(fn, cotune::launch_grid{}, out_span);
  CHECK(out == std::vector<int>{50, 60, 70, 80});
}
