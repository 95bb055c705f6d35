// The `cotune` command-line tool, run as a real process against a private cache that a real
// host-backend tuning filled.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <simdjson.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/gpu/precompiled_file.hpp>
// Included for their knobs, which register themselves during static initialisation (as in the tool).
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_knobs.hpp>
#endif
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis_knobs.hpp>
#endif

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"
#include "../support/tool_path.hpp"

namespace fs = std::filesystem;

namespace {

using cotune_test::tool_path;

/// False (with a warning) when the tool is not built. With COTUNE_TOOL the build made it a
/// dependency of this test, so a missing tool is a failure; the fallback path is only a guess.
bool tool_available() {
  if (fs::exists(tool_path())) return true;
#ifdef COTUNE_TOOL
  FAIL("the cotune tool is missing at " << tool_path());
#else
  WARN("the cotune tool is not built (looked for " << tool_path() << "); configure with COTUNE_BUILD_TOOLS=ON");
#endif
  return false;
}

/// Runs the tool. `stdout_only` drops its stderr (through sh), for output that must be pure JSON Lines.
cotune::detail::process_result cotune_cli(std::vector<std::string> args, const std::vector<std::string>& env = {},
                                          bool stdout_only = false) {
  std::vector<std::string> argv;
  if (stdout_only) argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null"};
  argv.push_back(tool_path());
  argv.insert(argv.end(), args.begin(), args.end());
  // 60 s: the tool reads a few small files; only a hung process gets near this.
  auto r = cotune::detail::run_process(argv, std::chrono::seconds(60), {}, env);
  INFO("cotune output:\n" << r.output);
  REQUIRE_FALSE(r.timed_out);
  return r;
}

/// The non-empty lines of `text` (JSON Lines records; simdjson's parser reuses its document, so each
/// is parsed where it is read).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// Parses one JSON Lines record (failing the test if it does not parse).
simdjson::dom::object parse_line(simdjson::dom::parser& parser, const std::string& line) {
  simdjson::dom::object o;
  INFO("line: " << line);
  REQUIRE(parser.parse(line).get(o) == simdjson::SUCCESS);
  return o;
}

std::string string_of(simdjson::dom::object o, const char* field) {
  std::string_view v;
  return o[field].get_string().get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
}

std::int64_t int_of(simdjson::dom::object o, const char* field) {
  std::int64_t v = -1;
  return o[field].get_int64().get(v) == simdjson::SUCCESS ? v : -1;
}

/// Sums n ints with UNROLL accumulators; every config gives the same answer.
const char* sum_code = R"(
extern "C" void sum(const int* x, int n, int* out) {
  int acc[UNROLL] = {};
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; ++u) acc[u] += x[i + u];
  int total = 0;
  for (; i < n; ++i) total += x[i];
  for (int u = 0; u < UNROLL; ++u) total += acc[u];
  *out = total;
}
)";

/// A private cache filled by one real tuning: two compiled binaries and one tuning result.
struct tuned_cache {
  cotune_test::temp_dir root{"cotune-cli"};
  fs::path dir = root / "cache";
  fs::path result_file;   ///< the <kernel>.autotune.json entry
  fs::path binary_file;   ///< one of the .so entries
  std::size_t files = 0;

  tuned_cache() {
    auto scope = cotune::knobs().cache.dir.scoped(dir.string());
    cotune::kernel_source kernel{.name = "cli_sum", .code = sum_code, .entry = "sum"};
    // Small budgets: the tests check what the tool reports, never timings.
    cotune::autotuner<void(const int*, int, int*)> tuner{
        kernel,
        {cotune::config{{"UNROLL", 1}}, cotune::config{{"UNROLL", 4}}},
        {.arg_names = {"x", "n", "out"}, .key = {"n"}, .cache_results = true,
         .bench = cotune::bench_options{.warmup_ms = 1.0, .rep_ms = 2.0}}};
    std::vector<int> x(256, 1);
    int out = 0;
    tuner(x.data(), static_cast<int>(x.size()), &out);
    REQUIRE(out == 256);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().parent_path() == dir) continue; // entries live in key directories
      ++files;
      if (e.path().filename() == "cli_sum.autotune.json") result_file = e.path();
      if (e.path().extension() == ".so") binary_file = e.path();
    }
    REQUIRE(!result_file.empty());
    REQUIRE(!binary_file.empty());
  }
};

/// Flips one byte in the middle of a file.
void damage(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto size = fs::file_size(file);
  f.seekg(static_cast<std::streamoff>(size / 2));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(size / 2));
  f.put(static_cast<char>(c ^ 0x5A));
}

} // namespace

TEST_CASE("cotune version prints the library's version and cache format", "[tools][cli]") {
  if (!tool_available()) return;
  auto r = cotune_cli({"version"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains(std::string("cotune ") + cotune::version));
  CHECK_THAT(r.output, Catch::Contains("cache format " + std::to_string(cotune::cache_format_version)));
}

TEST_CASE("a missing or unknown subcommand is a usage error with exit status 2", "[tools][cli]") {
  if (!tool_available()) return;
  CHECK(cotune_cli({}).exit_code == 2);
  CHECK(cotune_cli({"frobnicate"}).exit_code == 2);
  CHECK(cotune_cli({"cache"}).exit_code == 2);
  CHECK(cotune_cli({"cache", "show"}).exit_code == 2); // the file is required
  CHECK(cotune_cli({"--help"}).exit_code == 0);
}

TEST_CASE("cotune knobs lists every registered knob with its variable, type and doc", "[tools][cli]") {
  if (!tool_available()) return;
  auto r = cotune_cli({"knobs"}, {"COTUNE_BENCH_REP_MS=7.5"});
  REQUIRE(r.exit_code == 0);
  const auto knobs = cotune::knob_registry::instance().all();
  REQUIRE(knobs.size() >= 10);
  for (const auto* k : knobs) {
    INFO(k->name());
    CHECK_THAT(r.output, Catch::Contains(k->name()) && Catch::Contains(k->env()) && Catch::Contains(k->doc()));
  }
  // A value from the environment is the current value.
  CHECK_THAT(r.output, Catch::Contains("7.5 (set; default: 100.0)"));
}

TEST_CASE("cotune knobs --check names every bad value and what it accepts, and exits 1", "[tools][cli]") {
  if (!tool_available()) return;
  CHECK(cotune_cli({"knobs", "--check"}).exit_code == 0);
  auto r = cotune_cli({"knobs", "--check"}, {"COTUNE_COMPILE_TIMEOUT_MS=abc", "COTUNE_ISOLATE=sometimes"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("2 settings cannot be used"));
  CHECK_THAT(r.output, Catch::Contains("COTUNE_COMPILE_TIMEOUT_MS") && Catch::Contains("abc"));
  CHECK_THAT(r.output, Catch::Contains("COTUNE_ISOLATE=sometimes is not one of off, on, auto"));
}

TEST_CASE("cotune knobs --markdown prints one table row per knob, for the README", "[tools][cli]") {
  if (!tool_available()) return;
  auto r = cotune_cli({"knobs", "--markdown"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.starts_with("| Knob | Environment variable | Type | Default | Description |\n|---|"));
  for (const auto* k : cotune::knob_registry::instance().all())
    CHECK_THAT(r.output, Catch::Contains("| `" + k->name() + "` | `" + k->env() + "` | " + k->type_name() + " |"));
  // The README shows defaults, never what this machine happens to have set.
  auto set = cotune_cli({"knobs", "--markdown"}, {"COTUNE_BENCH_REP_MS=7.5"});
  CHECK(set.output == r.output);
}

TEST_CASE("cotune knobs masks the remote secret, the local cache key and passwords in URLs", "[tools][cli]") {
  if (!tool_available()) return;
  const std::vector<std::string> env{"COTUNE_REMOTE_SECRET=hunter2-secret",
                                     "COTUNE_REDIS_URL=redis://alice:pa55-word@127.0.0.1:6390/1",
                                     "COTUNE_CACHE_KEY=local-s3kr1t"};
  for (const auto& args : {std::vector<std::string>{"knobs"}, std::vector<std::string>{"knobs", "--json"}}) {
    auto r = cotune_cli(args, env);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, !Catch::Contains("hunter2") && !Catch::Contains("pa55") && !Catch::Contains("s3kr1t"));
#ifdef COTUNE_HAS_REDIS
    CHECK_THAT(r.output, Catch::Contains("redis://alice:***@127.0.0.1:6390/1"));
    CHECK_THAT(r.output, Catch::Contains("***"));
#endif
  }
  // A lone login is a password (redis://password@host), and an invalid URL's error shows no password.
  for (const auto* url : {"COTUNE_REDIS_URL=redis://pa55-word@127.0.0.1", "COTUNE_REDIS_URL=redis://u:pa55-word@h:99999"}) {
    auto r = cotune_cli({"knobs"}, {url});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, !Catch::Contains("pa55"));
  }
}

TEST_CASE("cotune knobs --json prints one parsable object per knob", "[tools][cli]") {
  if (!tool_available()) return;
  auto r = cotune_cli({"knobs", "--json"}, {}, true);
  REQUIRE(r.exit_code == 0);
  simdjson::dom::parser parser;
  std::vector<std::string> names;
  for (const auto& line : lines_of(r.output)) {
    auto o = parse_line(parser, line);
    names.push_back(string_of(o, "knob"));
    CHECK_FALSE(string_of(o, "env").empty());
    CHECK_FALSE(string_of(o, "type").empty());
  }
  for (const auto* k : cotune::knob_registry::instance().all())
    CHECK(std::find(names.begin(), names.end(), k->name()) != names.end());
}

TEST_CASE("cotune cache list shows every entry of a tuned cache as valid", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  SECTION("as a table") {
    auto r = cotune_cli({"cache", "list", "--dir", cache.dir.string()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("cli_sum.so") && Catch::Contains("cli_sum.autotune.json"));
    CHECK_THAT(r.output, Catch::Contains(cache.result_file.parent_path().filename().string()));
    CHECK_THAT(r.output, Catch::Contains(std::to_string(cache.files) + " valid, 0 corrupt"));
    CHECK_THAT(r.output, Catch::Contains("tuning result: kernel cli_sum"));
  }
  SECTION("as JSON Lines, one record per file and a summary") {
    auto r = cotune_cli({"cache", "list", "--dir", cache.dir.string(), "--json"}, {}, true);
    REQUIRE(r.exit_code == 0);
    simdjson::dom::parser parser;
    std::size_t files = 0, summaries = 0;
    for (const auto& line : lines_of(r.output)) {
      auto o = parse_line(parser, line);
      if (string_of(o, "type") == "file") {
        ++files;
        CHECK(string_of(o, "status") == "valid");
        CHECK(fs::exists(string_of(o, "path")));
        CHECK(int_of(o, "bytes") == static_cast<std::int64_t>(fs::file_size(string_of(o, "path"))));
      } else {
        ++summaries;
        CHECK(string_of(o, "type") == "summary");
        CHECK(int_of(o, "valid") == static_cast<std::int64_t>(cache.files));
        CHECK(int_of(o, "corrupt") == 0);
      }
    }
    CHECK(files == cache.files);
    CHECK(summaries == 1);
  }
  SECTION("the cache.dir knob is the default directory") {
    auto r = cotune_cli({"cache", "list"}, {"COTUNE_CACHE_DIR=" + cache.dir.string()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("cli_sum.autotune.json"));
  }
}

TEST_CASE("cotune cache verify passes on a sound cache and fails on a damaged entry", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  auto good = cotune_cli({"cache", "verify", "--dir", cache.dir.string()});
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Catch::Contains(std::to_string(cache.files) + " valid, 0 corrupt"));

  damage(cache.binary_file);
  // A write in progress (or left by a crash) is not corruption.
  { std::ofstream(cache.binary_file.parent_path() / ".tmp.cli_sum.so.1.abcdef") << "partial"; }
  auto bad = cotune_cli({"cache", "verify", "--dir", cache.dir.string()});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("corrupt: " + cache.binary_file.string()));
  CHECK_THAT(bad.output, Catch::Contains(std::to_string(cache.files - 1) + " valid, 1 corrupt, 1 temporary"));

  auto json = cotune_cli({"cache", "verify", "--dir", cache.dir.string(), "--json"}, {}, true);
  CHECK(json.exit_code == 1);
  simdjson::dom::parser parser;
  const auto lines = lines_of(json.output);
  REQUIRE(lines.size() == 3); // the corrupt file, the temporary file, the summary
  CHECK(string_of(parse_line(parser, lines[0]), "status") != "valid");
  auto summary = parse_line(parser, lines.back());
  CHECK(string_of(summary, "type") == "summary");
  CHECK(int_of(summary, "corrupt") == 1);
  CHECK(int_of(summary, "temporary") == 1);
  CHECK(int_of(summary, "valid") == static_cast<std::int64_t>(cache.files - 1));
}

TEST_CASE("cotune cache verify on a directory that does not exist finds nothing wrong", "[tools][cli]") {
  if (!tool_available()) return;
  cotune_test::temp_dir root{"cotune-cli"};
  auto r = cotune_cli({"cache", "verify", "--dir", (root / "nothing-here").string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("0 valid, 0 corrupt"));
}

TEST_CASE("cotune cache show prints a stored tuning result as a table", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  auto r = cotune_cli({"cache", "show", cache.result_file.string()});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("a verified cache entry"));
  CHECK_THAT(r.output, Catch::Contains("kernel:   cli_sum"));
  CHECK_THAT(r.output, Catch::Contains("* best"));
  CHECK_THAT(r.output, Catch::Contains("UNROLL: 1") && Catch::Contains("UNROLL: 4"));
  CHECK_THAT(r.output, Catch::Contains("median ms"));

  SECTION("a plain JSON copy reads too") {
    auto text = cotune::detail::read_file(cache.result_file);
    REQUIRE(text);
    const auto plain = cache.root / "result.json";
    std::ofstream(plain, std::ios::binary) << text->substr(0, text->size() - cotune::detail::frame_size);
    auto p = cotune_cli({"cache", "show", plain.string()});
    CHECK(p.exit_code == 0);
    CHECK_THAT(p.output, Catch::Contains("a plain JSON file") && Catch::Contains("* best"));
  }
  SECTION("a damaged entry is refused") {
    damage(cache.result_file);
    auto d = cotune_cli({"cache", "show", cache.result_file.string()});
    CHECK(d.exit_code == 1);
    CHECK_THAT(d.output, Catch::Contains("damaged, renamed or moved cache entry"));
  }
  SECTION("a file that is not a tuning result is refused") {
    auto n = cotune_cli({"cache", "show", cache.binary_file.string()});
    CHECK(n.exit_code == 1);
    CHECK_THAT(n.output, Catch::Contains("is not a tuning result"));
    auto missing = cotune_cli({"cache", "show", (cache.root / "missing.json").string()});
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.output, Catch::Contains("cannot read"));
  }
}

TEST_CASE("cotune cache clear asks first, then removes only cache entries", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  const auto foreign_file = cache.dir / "notes.txt";
  const auto foreign_dir = cache.dir / "not-a-key";
  { std::ofstream(foreign_file) << "mine"; }
  fs::create_directory(foreign_dir);
  { std::ofstream(foreign_dir / "data") << "mine too"; }

  // Standard input is /dev/null, not a terminal: without --yes nothing is removed.
  auto refused = cotune_cli({"cache", "clear", "--dir", cache.dir.string()});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("--yes"));
  CHECK(fs::exists(cache.result_file));
  CHECK(fs::exists(cache.binary_file));

  auto cleared = cotune_cli({"cache", "clear", "--dir", cache.dir.string(), "--yes"});
  CHECK(cleared.exit_code == 0);
  CHECK_THAT(cleared.output, Catch::Contains("removed"));
  CHECK_FALSE(fs::exists(cache.result_file));
  CHECK_FALSE(fs::exists(cache.binary_file));
  CHECK_FALSE(fs::exists(cache.result_file.parent_path()));
  CHECK(fs::exists(foreign_file));
  CHECK(fs::exists(foreign_dir / "data"));

  auto list = cotune_cli({"cache", "list", "--dir", cache.dir.string()});
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.output, Catch::Contains("0 keys") && Catch::Contains("0 valid"));
}

TEST_CASE("cotune cache gc reclaims orphaned temporary files and evicts beyond a size limit", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  // A name that does not say who wrote it (an older cotune's): only its age can tell.
  const auto orphan = cache.binary_file.parent_path() / ".tmp.cli_sum.so.12345.0123456789abcdef";
  std::ofstream(orphan) << "left behind by a writer killed mid-write";
  // A name that does: a process of this host, now gone.
  int name_pipe[2];
  REQUIRE(::pipe(name_pipe) == 0);
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    const auto name = cotune::detail::temporary_name_for("cli_sum.so");
    ::_exit(::write(name_pipe[1], name.data(), name.size()) == static_cast<ssize_t>(name.size()) ? 0 : 1);
  }
  REQUIRE(::waitpid(writer, nullptr, 0) == writer);
  char name[256] = {};
  const auto n = ::read(name_pipe[0], name, sizeof name - 1);
  ::close(name_pipe[0]);
  ::close(name_pipe[1]);
  REQUIRE(n > 0);
  const auto dead = cache.binary_file.parent_path() / std::string(name, static_cast<std::size_t>(n));
  std::ofstream(dead) << "left behind by a writer of this host that is gone";
  auto r = cotune_cli({"cache", "gc", "--dir", cache.dir.string()});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("removed 1 orphaned temporary files")); // the dead writer's, at once
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(orphan)); // too young by default

  r = cotune_cli({"cache", "gc", "--dir", cache.dir.string(), "--tmp-max-age", "0", "--json"}, {}, true);
  REQUIRE(r.exit_code == 0);
  simdjson::dom::parser parser;
  const auto lines = lines_of(r.output);
  REQUIRE(lines.size() == 1);
  auto o = parse_line(parser, lines[0]);
  CHECK(string_of(o, "type") == "gc");
  CHECK(int_of(o, "temporaries_removed") == 1);
  CHECK(int_of(o, "evicted") == 0);
  CHECK_FALSE(fs::exists(orphan));

  r = cotune_cli({"cache", "gc", "--dir", cache.dir.string(), "--max-bytes", "1"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains(fmt::format("evicted {} entries", cache.files)));
  r = cotune_cli({"cache", "verify", "--dir", cache.dir.string()});
  CHECK_THAT(r.output, Catch::Contains("0 valid, 0 corrupt, 0 temporary"));

  CHECK(cotune_cli({"cache", "gc", "--dir", cache.dir.string(), "--max-bytes", "-5"}).exit_code == 2);
}

TEST_CASE("cotune cache verify and gc refuse a cache directory others may write to", "[tools][cli]") {
  if (!tool_available()) return;
  tuned_cache cache;
  fs::permissions(cache.dir, fs::perms::all);
  auto r = cotune_cli({"cache", "verify", "--dir", cache.dir.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("untrusted") && Catch::Contains("chmod 700"));
  r = cotune_cli({"cache", "gc", "--dir", cache.dir.string(), "--max-bytes", "1"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("writable by others"));
  fs::permissions(cache.dir, fs::perms::owner_all, fs::perm_options::replace);
  CHECK(cotune_cli({"cache", "verify", "--dir", cache.dir.string()}).exit_code == 0);
}

TEST_CASE("cotune precompile refuses an unknown architecture, a job without GPU kernels and a missing compiler",
          "[tools][cli][precompiled]") {
  if (!tool_available()) return;
  cotune_test::temp_dir dir;
  const auto cuda_job = cotune_test::source_file("tests/cuda/data/precompiled.job.json").string();
  const auto host_job = cotune_test::source_file("examples/jobs/matmul.job.json").string();
  const auto out = (dir / "out.cotune-precompiled").string();
  auto r = cotune_cli({"precompile", cuda_job, "--arch", "ampere", "-o", out});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("'ampere' is neither sm_XY (CUDA) nor gfxNNN (HIP)"));
  r = cotune_cli({"precompile", host_job, "--arch", "sm_90", "-o", out});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("has no CUDA kernel for an sm_XY architecture"));
  CHECK(cotune_cli({"precompile", cuda_job, "-o", out}).exit_code == 2); // --arch is required
#ifdef COTUNE_HAS_CUDA
  // A compiler that cannot run: every entry is recorded as a failure naming it, and the file is still written.
  r = cotune_cli({"precompile", cuda_job, "--arch", "sm_90", "-o", out, "--nvcc", (dir / "no-nvcc").string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("5 entries (5 failed)") && Catch::Contains("could not be run"));
  const auto file = cotune::gpu::precompiled_file::read(out);
  REQUIRE(file.entries().size() == 5);
  CHECK_FALSE(file.entries().front().ok);
#endif
}
