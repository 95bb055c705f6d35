// `cotune tune`, `cotune db` and `cotune report`, run as real processes on a real job (a real
// compiler builds the kernel and its trampoline; the host backend measures it), with a private cache.
// The report is rendered by a real headless Chromium.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/tune/tuning_result.hpp>

#include "../support/temp_dir.hpp"
#include "../support/tool_path.hpp"

namespace fs = std::filesystem;

namespace {

using cotune_test::tool_path;

/// A job over a 3-size axpy whose UNROLL=3 candidate does not compile (every failure is a candidate's,
/// never the job's), plus a private cache; budgets are tiny, nothing asserts a timing.
struct job_dir {
  cotune_test::temp_dir root{"cotune-job"};
  fs::path job = root / "axpy.job.json";
  std::vector<std::string> env{"COTUNE_CACHE_DIR=" + (root / "cache").string(), "COTUNE_BENCH_SCREEN_REP_MS=0",
                               "COTUNE_REDIS_URL="};

  explicit job_dir(const std::string& extra_instance = "") {
    std::ofstream(root / "axpy.cpp") << R"(
#if UNROLL == 3
#error "UNROLL=3 is not supported"
#endif
extern "C" void axpy(float* y, const float* x, float a, int n) {
  for (int i = 0; i < n; i += UNROLL)
    for (int u = 0; u < UNROLL && i + u < n; ++u) y[i + u] += a * x[i + u];
}
)";
    std::ofstream(job) << R"({
  "name": "axpy-sizes",
  "bench": {"warmup_ms": 1, "rep_ms": 2},
  "kernels": [
    {
      "name": "axpy",
      "source": "axpy.cpp",
      "space": {"axes": {"UNROLL": [1, 3, 4]}, "constraints": ["UNROLL <= n"]},
      "arguments": [
        {"name": "y", "buffer": "float32", "extent": "n", "reset": true},
        {"name": "x", "buffer": "float32", "extent": "n", "fill": "random", "seed": 7},
        {"name": "a", "scalar": "float32", "value": 2.0},
        {"name": "n", "scalar": "int32", "value": "n"}
      ],
      "key": ["n"],
      "instances": [{"n": 2}, {"n": 1024}, {"n": 4096})" + extra_instance + R"(]
    }
  ]
}
)";
  }

  cotune::detail::process_result cotune(std::vector<std::string> args, bool stdout_only = false,
                                        std::vector<std::string> more_env = {}) const {
    std::vector<std::string> argv;
    if (stdout_only) argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null"};
    argv.push_back(tool_path());
    argv.insert(argv.end(), args.begin(), args.end());
    // `more_env` replaces a same-named variable of `env`: with both in the environment, a direct exec would
    // see the first (getenv) and one through sh the last.
    std::vector<std::string> e;
    for (const auto& v : env) {
      const auto name = v.substr(0, v.find('=') + 1);
      if (std::none_of(more_env.begin(), more_env.end(), [&](const std::string& m) { return m.starts_with(name); }))
        e.push_back(v);
    }
    e.insert(e.end(), more_env.begin(), more_env.end());
    auto r = cotune::detail::run_process(argv, std::chrono::seconds(120), {}, e);
    INFO("cotune output:\n" << r.output);
    REQUIRE_FALSE(r.timed_out);
    return r;
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct events {
  std::size_t candidates = 0, failed_candidates = 0, keys = 0, measured = 0, cached = 0, jobs = 0;
};

events count_events(const std::string& out) {
  events e;
  simdjson::dom::parser parser;
  for (const auto& line : lines_of(out)) {
    simdjson::dom::object o;
    INFO(line);
    REQUIRE(parser.parse(line).get(o) == simdjson::SUCCESS);
    std::string_view kind, status, outcome;
    REQUIRE(o["event"].get_string().get(kind) == simdjson::SUCCESS);
    if (kind == "candidate") {
      ++e.candidates;
      REQUIRE(o["status"].get_string().get(status) == simdjson::SUCCESS);
      if (status != "ok") ++e.failed_candidates;
    } else if (kind == "key") {
      ++e.keys;
      REQUIRE(o["outcome"].get_string().get(outcome) == simdjson::SUCCESS);
      if (outcome == "measured") ++e.measured;
      if (outcome == "cached") ++e.cached;
    } else if (kind == "job") {
      ++e.jobs;
    }
  }
  return e;
}

std::string chromium_path() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(p)) return p;
  return {};
}

} // namespace

TEST_CASE("cotune tune --dry-run prints the expanded job and tunes nothing", "[tools][tune]") {
  job_dir d;
  auto r = d.cotune({"tune", d.job.string(), "--dry-run"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("job 'axpy-sizes'") && Catch::Contains("1 kernel, 3 keys") &&
                           Catch::Contains("space: 3 configs (axes UNROLL: 3), 1 constraints") &&
                           Catch::Contains("instances: 3, candidates per instance 1..3 (total 7)"));
  CHECK_FALSE(fs::exists(d.root / "cache"));
  auto j = d.cotune({"tune", d.job.string(), "--dry-run", "--jsonl"}, true);
  CHECK_THAT(j.output, Catch::Contains(R"("event": "instance", "kernel": "axpy", "index": 0, "key": "y: float32, x: float32, n=2", "candidates": 1)"));
}

TEST_CASE("cotune tune tunes every key, reports each candidate and key as JSON Lines, then serves them from the cache",
          "[tools][tune]") {
  job_dir d;
  auto r = d.cotune({"tune", d.job.string(), "--jsonl"}, true);
  CHECK(r.exit_code == 0);
  const auto first = count_events(r.output);
  CHECK(first.candidates == 7);
  CHECK(first.failed_candidates == 2); // UNROLL=3 for n=1024 and n=4096
  CHECK(first.keys == 3);
  CHECK(first.measured == 3);
  CHECK(first.jobs == 1);
  CHECK_THAT(r.output, Catch::Contains("does not compile"));

  auto again = d.cotune({"tune", d.job.string(), "--jsonl"}, true);
  CHECK(again.exit_code == 0);
  const auto second = count_events(again.output);
  CHECK(second.cached == 3);
  CHECK(second.candidates == 0);
}

TEST_CASE("cotune tune exits 1 when a key fails and 2 when the job file is wrong", "[tools][tune]") {
  job_dir d(R"(, {"n": 3})"); // n=3 leaves UNROLL 1 and 3; the constraint would allow 3, which fails
  std::string job = *cotune::detail::read_file(d.job);
  job.replace(job.find("\"UNROLL <= n\""), 13, "\"UNROLL == 3\"");
  std::ofstream(d.job) << job;
  auto r = d.cotune({"tune", d.job.string()});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("every candidate failed") && Catch::Contains("0 measured"));

  job.replace(job.find("\"extent\": \"n\""), 13, "\"extent\": \"n *\"");
  std::ofstream(d.job) << job;
  auto bad = d.cotune({"tune", d.job.string()});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("axpy.job.json:10:") && Catch::Contains("kernels[0].arguments[0].extent"));
  CHECK(d.cotune({"tune", d.job.string(), "--shard", "4/4"}).exit_code == 2);
}

TEST_CASE("shard I/N (--shard) splits the keys between processes", "[tools][tune]") {
  job_dir d;
  auto a = d.cotune({"tune", d.job.string(), "--jsonl", "--shard", "0/2"}, true);
  auto b = d.cotune({"tune", d.job.string(), "--jsonl", "--shard", "1/2"}, true);
  CHECK(count_events(a.output).measured == 2);
  CHECK(count_events(b.output).measured == 1);
}

TEST_CASE("cotune db exports a job's winners, diffs databases and imports one into a cache", "[tools][db]") {
  job_dir d;
  const auto db1 = (d.root / "one.db.json").string(), db2 = (d.root / "two.db.json").string();
  auto exp = d.cotune({"db", "export", "--job", d.job.string(), "-o", db1});
  REQUIRE(exp.exit_code == 0);
  CHECK_THAT(exp.output, Catch::Contains("wrote 3 winners"));
  auto show = d.cotune({"db", "show", db1});
  CHECK_THAT(show.output, Catch::Contains("axpy [y: float32, x: float32, n=1024] on host") &&
                              Catch::Contains("3 winners, unsigned"));
  // From the cache the job filled: the same winners.
  REQUIRE(d.cotune({"db", "export", "--cache", (d.root / "cache").string(), "-o", db2}).exit_code == 0);
  auto same = d.cotune({"db", "diff", db1, db2});
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.output, Catch::Contains("0 added, 0 removed, 0 changed, 3 the same"));

  // Another winner for one key: diff says so and exits 1.
  std::string text = *cotune::detail::read_file(db1);
  auto two = d.cotune({"db", "export", "--cache", (d.root / "cache").string(), "-o", db2, "--winners-only"},
                      false, {"COTUNE_TUNING_DB_SECRET=s3cret"});
  REQUIRE(two.exit_code == 0);
  CHECK_THAT(two.output, Catch::Contains("(signed)"));
  auto refused = d.cotune({"db", "diff", db1, db2}, false, {"COTUNE_TUNING_DB_SECRET=s3cret"});
  CHECK(refused.exit_code == 2); // a refused file, not a difference
  CHECK_THAT(refused.output, Catch::Contains("not signed"));

  auto imp = d.cotune({"db", "import", db1, "--dir", (d.root / "other-cache").string()});
  CHECK(imp.exit_code == 0);
  CHECK_THAT(imp.output, Catch::Contains("imported 3 winners"));

  // A result no database reader accepts (an application tuner's kernel named `axpy.v2`) is left out of
  // an export with a warning naming its file and why, not written into a database whose import fails.
  {
    std::optional<cotune::tuning_result> r;
    (void)cotune::cache_inventory{d.root / "cache"}.files([&](const cotune::cache_file& f, std::string_view payload) {
      if (!r && f.file.ends_with(".autotune.json")) r = cotune::tuning_result::from_json(payload);
      return std::string();
    });
    REQUIRE(r);
    // One whose winner a database takes but one of whose losers it does not: exported without its candidates.
    auto loser = *r;
    loser.key_text = "n=7";
    cotune::candidate_result odd{cotune::config{{"MODE", "a\nb"}}};
    odd.status = cotune::candidate_status::compile_error;
    odd.reason = "refused";
    loser.candidates.push_back(odd);
    cotune::file_cache(d.root / "cache", cotune::detail::sha256_hex("another key"))
        .put(loser.json(), "axpy.autotune.json");
    r->kernel = "axpy.v2";
    cotune::file_cache(d.root / "cache", cotune::detail::sha256_hex("an application's key"))
        .put(r->json(), "axpy.v2.autotune.json");
  }
  const auto db3 = (d.root / "three.db.json").string();
  auto partial = d.cotune({"db", "export", "--cache", (d.root / "cache").string(), "-o", db3});
  REQUIRE(partial.exit_code == 0);
  CHECK_THAT(partial.output, Catch::Contains("warning: left out ") &&
                                 Catch::Contains("axpy.v2.autotune.json: kernel name "
                                                 "'axpy.v2' is not a C identifier") &&
                                 Catch::Contains("1 tuning result left out") && Catch::Contains("wrote 4 winners"));
  CHECK_THAT(partial.output, Catch::Contains("axpy.autotune.json: only the winner is exported, not its candidates: "
                                             "\"result\" candidate ") &&
                                 Catch::Contains("parameter 'MODE' holds a control character (byte 0x0a at 1)"));
  auto imported = d.cotune({"db", "import", db3, "--dir", (d.root / "third-cache").string()});
  CHECK(imported.exit_code == 0);
  CHECK_THAT(imported.output, Catch::Contains("imported 4 winners"));
}

TEST_CASE("cotune db from-triton writes Triton's autotune files as a database, and names a bad file",
          "[tools][db][triton_import]") {
  job_dir d;
  const auto file = d.root / "add_kernel.autotune.json";
  {
    std::ofstream(file) << R"({"key": [1024, "torch.float32", "torch.float32"], "configs_timings": [)"
                        << R"([{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.02, 0.019, 0.021]], )"
                        << R"([{"kwargs": {"BLOCK": 1024}, "num_warps": 8, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [Infinity, Infinity, Infinity]]]})";
  }
  const auto db = (d.root / "triton.db.json").string();
  auto made = d.cotune({"db", "from-triton", file.string(), "--args", "x:tensor, out:tensor, n", "--key", "n",
                        "--device", "NVIDIA H200", "-o", db});
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.output, Catch::Contains("add_kernel [x: float32, out: float32, n=1024]") &&
                              Catch::Contains("BLOCK: 64") && Catch::Contains("wrote 1 winners"));
  auto show = d.cotune({"db", "show", db});
  CHECK_THAT(show.output, Catch::Contains("add_kernel [x: float32, out: float32, n=1024] on NVIDIA H200"));
  // One tensor too few for the key: the error names the file and what to check.
  auto bad = d.cotune({"db", "from-triton", file.string(), "--args", "x:tensor, out, n", "--key", "n", "--device",
                       "NVIDIA H200", "-o", db});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("add_kernel.autotune.json") && Catch::Contains("which arguments are tensors"));
  auto missing = d.cotune({"db", "from-triton", (d.root / "nope.autotune.json").string(), "--args", "n", "--device",
                           "X", "-o", db});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("nope.autotune.json: cannot read it"));
  // Each file within the limit, but not all of them together: 9 files of 2 configs against 8 x 2.
  std::vector<std::string> many{"db", "from-triton"};
  for (int i = 0; i < 9; ++i) many.push_back(file.string());
  for (std::string a : {"--args", "x:tensor, out:tensor, n", "--key", "n", "--device", "NVIDIA H200", "-o"})
    many.push_back(a);
  many.push_back(db);
  auto together = d.cotune(many, false, {"COTUNE_JOB_MAX_CANDIDATES=2"});
  CHECK(together.exit_code == 2);
  CHECK_THAT(together.output, Catch::Contains("the Triton files so far hold 18 configs together, more than 16"));
  many.erase(many.begin() + 2); // 8 files: 16 configs
  CHECK(d.cotune(many, false, {"COTUNE_JOB_MAX_CANDIDATES=2"}).exit_code == 0);
}

TEST_CASE("cotune tune refuses a job that would expand past the candidate limit with exit 2, before expanding it",
          "[tools][tune][input_limits]") {
  job_dir d;
  std::string job = *cotune::detail::read_file(d.job);
  auto values = [](int n) {
    std::string out = "[";
    for (int v = 1; v <= n; ++v) out += (v > 1 ? ", " : "") + std::to_string(v);
    return out + "]";
  };
  std::string axes = "{";
  for (int a = 0; a < 8; ++a) axes += (a ? ", \"A" : "\"A") + std::to_string(a) + "\": " + values(100);
  std::string huge = job;
  huge.replace(huge.find(R"({"UNROLL": [1, 3, 4]})"), 21, axes + "}");
  std::ofstream(d.job) << huge;
  auto configs = d.cotune({"tune", d.job.string(), "--dry-run"});
  CHECK(configs.exit_code == 2);
  CHECK_THAT(configs.output, Catch::Contains("axpy.job.json:8:25: kernels[0].space.axes: ") &&
                                 Catch::Contains("10000000000000000 configs, more than the limit of 100000 (config") &&
                                 Catch::Contains("COTUNE_JOB_MAX_CANDIDATES") && !Catch::Contains("bad_alloc"));

  std::string many = job;
  many.replace(many.find(R"([{"n": 2}, {"n": 1024}, {"n": 4096}])"), 36,
               "{\"n\": " + values(1000) + ", \"m\": " + values(1000) + ", \"k\": " + values(1000) + "}");
  std::ofstream(d.job) << many;
  auto instances = d.cotune({"tune", d.job.string(), "--dry-run"});
  CHECK(instances.exit_code == 2);
  CHECK_THAT(instances.output, Catch::Contains("axpy.job.json:16:20: kernels[0].instances: ") &&
                                   Catch::Contains("(n 1000 x m 1000 x k 1000) = 1000000000 instances") &&
                                   Catch::Contains("COTUNE_JOB_MAX_CANDIDATES"));
  // The knob raises the limit: 3 x 1000 pairs fit in 3000.
  many = job;
  many.replace(many.find(R"([{"n": 2}, {"n": 1024}, {"n": 4096}])"), 36, "{\"n\": " + values(1000) + "}");
  std::ofstream(d.job) << many;
  CHECK(d.cotune({"tune", d.job.string(), "--dry-run"}, false, {"COTUNE_JOB_MAX_CANDIDATES=2999"}).exit_code == 2);
  CHECK(d.cotune({"tune", d.job.string(), "--dry-run"}, false, {"COTUNE_JOB_MAX_CANDIDATES=3000"}).exit_code == 0);
}

TEST_CASE("cotune db import and from-triton refuse a kernel named ../../../evil and launch options out of range, "
          "with exit 2 and nothing written",
          "[tools][db][input_limits]") {
  job_dir d;
  cotune::tuning_result r;
  r.kernel = "../../../evil";
  r.key_text = "n=64";
  cotune::candidate_result c{cotune::config{{"BLOCK", 64}}};
  c.status = cotune::candidate_status::ok;
  c.time = {0.5, 0.4, 0.6};
  r.candidates.push_back(c);
  r.winner = 0;
  r.made = cotune::provenance{"node1", "NVIDIA H200", "2026-12-04T00:00:00Z", "0.1.0"};
  cotune::batch::tuning_database evil;
  evil.add(cotune::batch::database_entry::from(r));
  const auto evil_db = d.root / "evil.db.json";
  // Forged (save refuses the entry): correctly checksummed, only the name is wrong.
  std::ofstream(evil_db) << evil.json();
  const auto cache = d.root / "import-cache";
  auto imp = d.cotune({"db", "import", evil_db.string(), "--dir", cache.string()});
  CHECK(imp.exit_code == 2);
  CHECK_THAT(imp.output, Catch::Contains("evil.db.json: entries[0]: kernel name '../../../evil' is not a C identifier"));
  CHECK_FALSE(fs::exists(cache));

  const auto file = d.root / "add_kernel.autotune.json";
  const std::string row =
      R"([{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.02, 0.019, 0.021]])";
  auto triton = [&](const std::string& the_row, std::vector<std::string> more) {
    std::ofstream(file) << R"({"key": [1024, "torch.float32", "torch.float32"], "configs_timings": [)" << the_row << "]}";
    std::vector<std::string> args{"db", "from-triton", file.string(), "--args", "x:tensor, out:tensor, n", "--key", "n",
                                  "--device", "NVIDIA H200", "-o", (d.root / "triton.db.json").string()};
    args.insert(args.end(), more.begin(), more.end());
    return d.cotune(args);
  };
  auto named = triton(row, {"--kernel", "../../../evil"});
  CHECK(named.exit_code == 2);
  CHECK_THAT(named.output, Catch::Contains("kernel name '../../../evil' is not a C identifier"));
  std::string negative = row;
  negative.replace(negative.find(R"("num_warps": 4)"), 14, R"("num_warps": -4)");
  auto warps = triton(negative, {});
  CHECK(warps.exit_code == 2);
  CHECK_THAT(warps.output, Catch::Contains("add_kernel.autotune.json: configs_timings[0]: num_warps = -4 is out of range"));
  negative = row;
  negative.replace(negative.find(R"("num_stages": 3)"), 15, R"("num_stages": -1)");
  CHECK_THAT(triton(negative, {}).output, Catch::Contains("num_stages = -1 is out of range"));
  negative = row;
  negative.replace(negative.find(R"("num_ctas": 1)"), 13, R"("num_ctas": 0)");
  auto ctas = triton(negative, {});
  CHECK(ctas.exit_code == 2);
  CHECK_THAT(ctas.output, Catch::Contains("num_ctas = 0 is out of range"));
  CHECK_FALSE(fs::exists(d.root / "triton.db.json"));
  CHECK(triton(row, {}).exit_code == 0);
}

TEST_CASE("cotune tune ends with each key's winner, keys as the database writes them, host configs without launch "
          "options", "[tools][tune]") {
  job_dir d;
  auto r = d.cotune({"tune", d.job.string()}, true); // stdout alone: the winners
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::StartsWith("winners:\n") &&
                           Catch::Matches("[\\s\\S]*\n  axpy \\[y: float32, x: float32, n=1024\\]: \\{UNROLL: [14]\\} "
                                          "[0-9.]+ ms \\(measured, 3 candidates\\)\n[\\s\\S]*"));
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 4); // the heading and 3 keys
  // Read again: from the cache, said so; nothing shows GPU launch options or the tuner's `instance: ` name.
  auto again = d.cotune({"tune", d.job.string()}, false, {"COTUNE_PRINT_AUTOTUNING=1"});
  CHECK_THAT(again.output, Catch::Contains("axpy [y: float32, x: float32, n=2]: {UNROLL: 1}") &&
                               Catch::Contains("(from the result cache)"));
  auto jsonl = d.cotune({"tune", d.job.string(), "--jsonl"}, true, {"COTUNE_CACHE_DIR=" + (d.root / "c2").string()});
  CHECK(count_events(jsonl.output).measured == 3);
  CHECK_THAT(jsonl.output, Catch::Contains(R"("winner": "UNROLL: 1", "winner_config": {"params": {"UNROLL": 1}})"));
  for (const auto* out : {&r.output, &again.output, &jsonl.output}) {
    CHECK_THAT(*out, !Catch::Contains("num_warps") && !Catch::Contains("num_stages") && !Catch::Contains("num_ctas"));
    CHECK_THAT(*out, !Catch::Contains("instance: "));
  }
  // --quiet: the summary line alone.
  auto quiet = d.cotune({"tune", d.job.string(), "--quiet"});
  CHECK(quiet.exit_code == 0);
  CHECK_THAT(quiet.output, !Catch::Contains("winners:") && Catch::Contains("3 keys: 0 measured, 3 from the cache"));
}

TEST_CASE("with COTUNE_PRINT_AUTOTUNING, a job prints each measured key's summary and table, and no summary for a "
          "cache hit", "[tools][tune]") {
  job_dir d;
  auto first = d.cotune({"tune", d.job.string()}, false, {"COTUNE_PRINT_AUTOTUNING=1"});
  CHECK(first.exit_code == 0);
  CHECK_THAT(first.output, Catch::Contains("cotune autotuning for kernel axpy,\nwith key as (y: float32, x: float32, n=1024),"));
  auto again = d.cotune({"tune", d.job.string()}, false, {"COTUNE_PRINT_AUTOTUNING=1"});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("cotune: axpy [y: float32, x: float32, n=1024]: tuning result from the result cache"));
  CHECK_THAT(again.output, !Catch::Contains("cotune autotuning for kernel") && !Catch::Contains("finished after"));
}

TEST_CASE("cotune tune uses an imported database and COTUNE_TUNING_DB as an application's tuner does, measuring no key",
          "[tools][tune][db]") {
  job_dir d;
  const auto db = (d.root / "axpy.db.json").string();
  REQUIRE(d.cotune({"tune", d.job.string(), "--db", db, "--quiet"}).exit_code == 0);

  // Another machine's empty cache, with the database imported into it.
  const std::string imported = "COTUNE_CACHE_DIR=" + (d.root / "imported").string();
  auto imp = d.cotune({"db", "import", db}, false, {imported});
  REQUIRE(imp.exit_code == 0);
  auto from_import = d.cotune({"tune", d.job.string(), "--jsonl"}, true, {imported});
  CHECK(from_import.exit_code == 0);
  const auto seen = count_events(from_import.output);
  CHECK(seen.measured == 0);
  CHECK(seen.cached == 3);
  CHECK(seen.candidates == 0);
  CHECK_THAT(from_import.output, Catch::Contains(R"("source": "shipped tuning database")"));

  // The database named by COTUNE_TUNING_DB, read-only, with an empty cache.
  const std::vector<std::string> shipped{"COTUNE_CACHE_DIR=" + (d.root / "shipped").string(), "COTUNE_TUNING_DB=" + db};
  auto from_knob = d.cotune({"tune", d.job.string()}, true, shipped);
  CHECK(from_knob.exit_code == 0);
  CHECK_THAT(from_knob.output, Catch::Contains("axpy [y: float32, x: float32, n=4096]: {UNROLL: ") &&
                                   Catch::Contains("(from the tuning database)") && !Catch::Contains("(measured"));
  // A key the database lacks is tuned.
  job_dir more(R"(, {"n": 64})");
  auto partly = more.cotune({"tune", more.job.string(), "--jsonl"}, true, {"COTUNE_TUNING_DB=" + db});
  const auto partial = count_events(partly.output);
  CHECK(partial.measured == 1);
  CHECK(partial.cached == 3);
}

TEST_CASE("cotune report renders a job as a page headless Chromium draws", "[tools][report][browser]") {
  job_dir d;
  const auto page = d.root / "report.html";
  auto r = d.cotune({"report", d.job.string(), "-o", page.string(), "--title", "axpy sizes"});
  REQUIRE(r.exit_code == 0);
  const std::string html = *cotune::detail::read_file(page);
  CHECK_THAT(html, Catch::Contains("<title>axpy sizes</title>") && Catch::Contains("<svg class=\"heatmap\""));
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg")); // the SVG namespace is the only URL
  CHECK(html.find("<script") == std::string::npos);

  const std::string chromium = chromium_path();
  if (chromium.empty()) {
    WARN("chromium is not installed (scripts/install-deps installs Debian's chromium): the page was not rendered");
    return;
  }
  auto browser = [&](std::vector<std::string> args, const fs::path& url) {
    std::vector<std::string> argv{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                  "--user-data-dir=" + (d.root / "chromium").string(), "--window-size=1000,800"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("file://" + url.string());
    auto p = cotune::detail::run_process(argv, std::chrono::seconds(90), {}, {"HOME=" + d.root.string()});
    INFO("chromium output:\n" << p.output);
    REQUIRE_FALSE(p.timed_out);
    REQUIRE(p.exit_code == 0);
    return p;
  };
  browser({"--screenshot=" + (d.root / "report.png").string()}, page);
  std::ofstream(d.root / "blank.html") << "<!DOCTYPE html><html><head><title>blank</title></head><body></body></html>";
  browser({"--screenshot=" + (d.root / "blank.png").string()}, d.root / "blank.html");
  const auto shot = fs::file_size(d.root / "report.png"), blank = fs::file_size(d.root / "blank.png");
  INFO("screenshot " << shot << " bytes, blank page " << blank << " bytes");
  CHECK(shot > 4 * blank); // a white page compresses to almost nothing; text and bars do not

  auto dom = browser({"--dump-dom"}, page);
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = dom.output.find(needle); at != std::string::npos; at = dom.output.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count("<title>axpy sizes</title>") == 1);
  CHECK(count("<section class=\"key\"") == 3);
  CHECK(count("<g class=\"candidate") == 7);
  CHECK(count("<g class=\"cell\"") == 3);
  CHECK(count("<tr class=\"failure\"") == 2);
}
