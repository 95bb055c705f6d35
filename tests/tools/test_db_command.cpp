// `cotune db diff` and `cotune db show`, run as real processes on real database files (written by the
// library, as `cotune db export` writes them): which differences count, the exit status, and how a host
// kernel's winners are shown.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cotune/detail/process.hpp>
#include <cotune/batch/tuning_database.hpp>

#include "../support/temp_dir.hpp"
#include "../support/tool_path.hpp"

namespace fs = std::filesystem;
namespace cj = cotune::batch;

namespace {

using cotune_test::tool_path;

cotune::detail::process_result cotune_cli(std::vector<std::string> args) {
  std::vector<std::string> argv{tool_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cotune::detail::run_process(argv, std::chrono::seconds(60), {}, {"COTUNE_TUNING_DB_SECRET="});
  INFO("cotune output:\n" << r.output);
  REQUIRE_FALSE(r.timed_out);
  return r;
}

/// The entry of a key whose winner is BLOCK=`block` at `ms` (p20 and p80 `spread` below and above), on
/// the host backend (no launch options) or a GPU's.
cj::database_entry entry(const std::string& key, int block, double ms, double spread, bool host = true) {
  cotune::tuning_result r;
  r.kernel = "matmul";
  r.key_text = key;
  r.launch_options = !host;
  for (int b : {16, 32, 64}) {
    cotune::candidate_result c{cotune::config{{"BLOCK", b}}};
    c.status = cotune::candidate_status::ok;
    c.time = b == block ? cotune::timings{ms, ms - spread, ms + spread} : cotune::timings{2 * ms, 2 * ms, 2 * ms};
    r.candidates.push_back(c);
  }
  r.winner = block == 16 ? 0 : block == 32 ? 1 : 2;
  r.made = cotune::provenance{"node1", host ? "host (test cpu)" : "NVIDIA H200", "2026-12-04T00:00:00Z", "0.1.0"};
  return cj::database_entry::from(r);
}

struct two_databases {
  cotune_test::temp_dir dir{"cotune-db-diff"};
  std::string a = (dir / "a.db.json").string(), b = (dir / "b.db.json").string();

  two_databases(std::vector<cj::database_entry> first, std::vector<cj::database_entry> second) {
    cj::tuning_database x, y;
    for (auto& e : first) x.add(std::move(e));
    for (auto& e : second) y.add(std::move(e));
    x.save(a);
    y.save(b);
  }
};

} // namespace

TEST_CASE("db diff counts another winner within the measured noise as tied and exits 0", "[tools][db]") {
  // Two runs minutes apart: 0.2628 ms and 0.2645 ms, each with a p20-p80 band of +-0.003 ms, another config.
  two_databases d({entry("n=256", 16, 0.2628, 0.003)}, {entry("n=256", 32, 0.2645, 0.003)});
  auto r = cotune_cli({"db", "diff", d.a, d.b});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("tied     matmul [n=256] on host (test cpu) (another winner, within the measured noise)") &&
                           Catch::Contains("  - {BLOCK: 16} 0.2628 ms (p20-p80 0.2598-0.2658)") &&
                           Catch::Contains("  + {BLOCK: 32} 0.2645 ms (p20-p80 0.2615-0.2675)") &&
                           Catch::Contains("0 added, 0 removed, 0 changed, 0 the same, 1 tied"));
  auto json = cotune_cli({"db", "diff", d.a, d.b, "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.output, Catch::Contains(R"({"change": "tied", "kernel": "matmul", "key": "n=256")") &&
                              Catch::Contains(R"("changed": 0, "same": 0, "tied": 1)"));
}

TEST_CASE("db diff exits 1 for a winner that changed beyond the noise, unless --tolerance covers it", "[tools][db]") {
  // 3% apart, bands of +-0.5%: clear of the noise.
  two_databases d({entry("n=256", 16, 1.00, 0.005), entry("n=512", 16, 8.0, 0.04)},
                  {entry("n=256", 32, 1.03, 0.005), entry("n=512", 16, 9.0, 0.04)});
  auto r = cotune_cli({"db", "diff", d.a, d.b});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("changed  matmul [n=256] on host (test cpu)\n") &&
                           Catch::Contains("0 added, 0 removed, 1 changed, 1 the same, 0 tied"));
  auto tolerant = cotune_cli({"db", "diff", d.a, d.b, "--tolerance", "5"});
  CHECK(tolerant.exit_code == 0);
  CHECK_THAT(tolerant.output, Catch::Contains("0 changed, 1 the same, 1 tied (another winner within the noise or 5%)"));
  auto strict = cotune_cli({"db", "diff", d.a, d.b, "--tolerance", "2"});
  CHECK(strict.exit_code == 1);
  CHECK(cotune_cli({"db", "diff", d.a, d.b, "--tolerance", "-1"}).exit_code != 0);
}

TEST_CASE("db diff exits 1 for an added or removed key, whatever the tolerance", "[tools][db]") {
  two_databases d({entry("n=256", 16, 1.0, 0.01)}, {entry("n=256", 16, 1.0, 0.01), entry("n=512", 16, 8.0, 0.01)});
  auto r = cotune_cli({"db", "diff", d.a, d.b, "--tolerance", "50"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("added    matmul [n=512]") && Catch::Contains("1 added, 0 removed"));
}

TEST_CASE("db show and db diff show a host kernel's configs without GPU launch options", "[tools][db]") {
  two_databases d({entry("n=256", 16, 1.0, 0.001), entry("n=256", 16, 1.0, 0.001, false)},
                  {entry("n=256", 32, 2.0, 0.001), entry("n=256", 32, 2.0, 0.001, false)});
  for (const std::vector<std::string>& args : {std::vector<std::string>{"db", "show", d.a},
                                               std::vector<std::string>{"db", "show", d.a, "--json"}}) {
    auto show = cotune_cli(args);
    CHECK(show.exit_code == 0);
    const auto host = show.output.find("host (test cpu)"), gpu = show.output.find("NVIDIA H200");
    REQUIRE(host != std::string::npos);
    REQUIRE(gpu != std::string::npos);
    // Sorted by device: the GPU's line first, with its launch options; the host's after it, without.
    CHECK(show.output.find("num_warps") < host);
    CHECK(show.output.find("num_warps", host) == std::string::npos);
    CHECK_THAT(show.output, Catch::Contains("BLOCK: 16"));
  }
  for (const std::vector<std::string>& args : {std::vector<std::string>{"db", "diff", d.a, d.b},
                                               std::vector<std::string>{"db", "diff", d.a, d.b, "--json"}}) {
    auto diff = cotune_cli(args);
    CHECK(diff.exit_code == 1);
    const auto host = diff.output.find("host (test cpu)");
    REQUIRE(host != std::string::npos);
    CHECK(diff.output.find("num_warps") < host);
    CHECK(diff.output.find("num_warps", host) == std::string::npos);
  }
}

TEST_CASE("db predict names a config for a key nobody tuned from its nearest tuned neighbour, and --held-out "
          "reports the regret of predicting each key from the others",
          "[tools][db][prediction]") {
  cotune_test::temp_dir dir{"cotune-db-predict"};
  const std::string file = (dir / "app.db.json").string();
  cj::tuning_database db;
  db.add(entry("n=256", 16, 1.0, 0.05));
  db.add(entry("n=1024", 32, 1.0, 0.05));
  db.add(entry("n=4096", 64, 1.0, 0.05));
  db.save(file);

  auto p = cotune_cli({"db", "predict", file, "--kernel", "matmul", "--key", "n=3000"});
  CHECK(p.exit_code == 0);
  CHECK_THAT(p.output, Catch::Contains("BLOCK: 64") && Catch::Contains("the winner of [n=4096]"));
  auto none = cotune_cli({"db", "predict", file, "--kernel", "matmul", "--key", "m=3000"});
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.output, Catch::Contains("no key of this shape"));

  // Each key predicted from the others: every prediction is another BLOCK, twice as slow (100% regret).
  auto held = cotune_cli({"db", "predict", file, "--held-out"});
  CHECK(held.exit_code == 0);
  CHECK_THAT(held.output, Catch::Contains("matmul [n=4096] on host (test cpu): tuned {BLOCK: 64}, predicted "
                                          "{BLOCK: 32} from [n=1024]: regret 100.0%"));
  CHECK_THAT(held.output, Catch::Contains("3 keys with a known regret: 0 predicted exactly, mean regret 100.0%"));
}
