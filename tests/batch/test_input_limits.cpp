// Every file the job module reads is bounded before it is expanded: job files by the (config,
// instance) pairs counted from their axes and instances, databases and Triton files by their names,
// launch options, counts and sizes; each refusal names the file, the field, the limit and the knob.
// Every test here refuses before building anything, so CTest gives this program a short TIMEOUT
// (tests/CMakeLists.txt): a reader that expands first fails it by running out of time or memory.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <limits>
#include <string>

#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/triton_import.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/detail/files.hpp>

#include "../support/temp_dir.hpp"

namespace cj = cotune::batch;

namespace {

/// A host job of one kernel whose space is `axes` (JSON) and whose instances are `instances` (JSON).
std::string job_with(const std::string& axes, const std::string& instances, const std::string& name = "k") {
  return R"({
  "kernels": [
    {
      "name": ")" + name + R"(",
      "code": "extern \"C\" void k(float* y, int n) {}",
      "space": {
        "axes": )" + axes + R"(
      },
      "arguments": [
        {"name": "y", "buffer": "float32", "extent": "n"},
        {"name": "n", "scalar": "int32", "value": "n"}
      ],
      "key": ["n"],
      "instances": )" + instances + R"(
    }
  ]
}
)";
}

/// `{"A0": [1, ..., per], "A1": [...], ...}`: `count` axes of `per` values each.
std::string axes(int count, int per) {
  std::string out = "{";
  for (int a = 0; a < count; ++a) {
    out += (a ? ", " : "") + std::string("\"A") + std::to_string(a) + "\": [";
    for (int v = 1; v <= per; ++v) out += (v > 1 ? ", " : "") + std::to_string(v);
    out += "]";
  }
  return out + "}";
}

/// `[1, ..., n]`.
std::string values(int n) {
  std::string out = "[";
  for (int v = 1; v <= n; ++v) out += (v > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

std::string job_refusal(const std::string& text) {
  try {
    (void)cj::job_spec::parse(text, "big.json");
  } catch (const cj::job_error& e) {
    return e.what();
  }
  FAIL("the job was accepted");
  return {};
}

cotune::tuning_result result_of(std::string kernel, cotune::config winner) {
  cotune::tuning_result r;
  r.kernel = std::move(kernel);
  r.key_text = "n=64";
  cotune::candidate_result c{std::move(winner)};
  c.status = cotune::candidate_status::ok;
  c.time = {0.5, 0.4, 0.6};
  r.candidates.push_back(c);
  r.winner = 0;
  r.made = cotune::provenance{"node1", "NVIDIA H200", "2026-12-04T00:00:00Z", "0.1.0"};
  return r;
}

/// A database holding the entry of one result (result_of's) of `kernel` with config {BLOCK: `block`}.
cj::tuning_database database_of(std::string kernel, std::int64_t block) {
  cj::tuning_database db;
  db.add(cj::database_entry::from(result_of(std::move(kernel), cotune::config{{"BLOCK", block}})));
  return db;
}

/// The message of the database_error reading `db`'s text raises (a correctly checksummed file).
std::string database_refusal(const cj::tuning_database& db) {
  try {
    (void)cj::tuning_database::from_json(db.json(), "", "forged.db.json");
  } catch (const cj::database_error& e) {
    return e.what();
  }
  FAIL("the database was accepted");
  return {};
}

const std::string triton_row =
    R"([{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.02, 0.019, 0.021]])";

std::string triton_file(const std::string& row = triton_row, int rows = 1) {
  std::string out = R"({"key": [1024, "torch.float32"], "configs_timings": [)";
  for (int i = 0; i < rows; ++i) out += (i ? ", " : "") + row;
  return out + "]}";
}

/// `triton_row` with `from` replaced by `to`.
std::string triton_row_with(const std::string& from, const std::string& to) {
  std::string r = triton_row;
  const auto at = r.find(from);
  REQUIRE(at != std::string::npos);
  return r.replace(at, from.size(), to);
}

cj::triton_signature signature(std::string kernel = "add_kernel") {
  return {.kernel = std::move(kernel), .args = {{"x", true}, {"n"}}, .key = {"n"}, .device = "NVIDIA H200"};
}

std::string triton_refusal(const std::string& text, const cj::triton_signature& sig = signature()) {
  try {
    (void)cj::import_triton(text, sig, "add_kernel.autotune.json");
  } catch (const cj::database_error& e) {
    return e.what();
  }
  FAIL("the Triton file was accepted");
  return {};
}

} // namespace

TEST_CASE("counts saturate instead of wrapping, and kernel names are C identifiers that fit a file name",
          "[job][input_limits]") {
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  static_assert(cj::saturating_product(100'000'000, 100'000'000) == 10'000'000'000'000'000);
  static_assert(cj::saturating_product(std::uint64_t{1} << 32, std::uint64_t{1} << 32) == most);
  static_assert(cj::saturating_product(0, most) == 0);
  static_assert(cj::saturating_sum(most - 1, 2) == most);
  static_assert(cj::is_kernel_name("matmul_fp16") && !cj::is_kernel_name("../../../evil") &&
                !cj::is_kernel_name("a/b") && !cj::is_kernel_name("") && !cj::is_kernel_name("9lives"));
  std::uint64_t n = 1;
  for (int axis = 0; axis < 20; ++axis) n = cj::saturating_product(n, 100); // 10^40
  CHECK(n == most);
  CHECK(cj::count_text(n) == "more than 18446744073709551615");
  CHECK(cj::is_kernel_name(std::string(cj::max_kernel_name_bytes, 'k')));
  CHECK_FALSE(cj::is_kernel_name(std::string(cj::max_kernel_name_bytes + 1, 'k')));
}

TEST_CASE("a job of 8 axes of 100 values (10^16 configs) is refused from its axes, before one config is built",
          "[job][input_limits]") {
  const auto why = job_refusal(job_with(axes(8, 100), R"({"n": [1024]})"));
  CHECK_THAT(why, Catch::StartsWith("big.json:7:17: kernels[0].space.axes: ") &&
                      Catch::Contains("A0 100 x A1 100 x A2 100 x A3 100 x A4 100 x A5 100 x A6 100 x A7 100") &&
                      Catch::Contains("is 10000000000000000 configs, more than the limit of 100000 (config") &&
                      Catch::Contains("(job.max_candidates, COTUNE_JOB_MAX_CANDIDATES)") &&
                      Catch::Contains("raise the limit"));
  // 10^40 does not fit 64 bits: it is refused as more than any count, not wrapped into a small one.
  CHECK_THAT(job_refusal(job_with(axes(20, 100), R"({"n": [1024]})")),
             Catch::Contains("kernels[0].space.axes") && Catch::Contains("more than 18446744073709551615 configs"));
}

TEST_CASE("a job of 1000 x 1000 x 1000 instances is refused from its value lists, before one instance is built",
          "[job][input_limits]") {
  const auto text = job_with(R"({"UNROLL": [1, 2]})",
                             "{\"M\": " + values(1000) + ", \"N\": " + values(1000) + ", \"n\": " + values(1000) + "}");
  CHECK_THAT(job_refusal(text),
             Catch::StartsWith("big.json:14:20: kernels[0].instances: ") &&
                 Catch::Contains("kernel 'k' expands to 2 configs x (M 1000 x N 1000 x n 1000) = 1000000000 "
                                 "instances = 2000000000 (config, instance) pairs, more than the limit of 100000 "
                                 "(job.max_candidates, COTUNE_JOB_MAX_CANDIDATES)"));
}

TEST_CASE("the candidate limit holds at its value and over all the kernels of a job", "[job][input_limits]") {
  const auto one = job_with(R"({"UNROLL": [1, 2, 4]})", R"({"n": [64, 128]})"); // 6 pairs
  {
    auto limit = cj::job_knobs().max_candidates.scoped(6);
    CHECK(cj::job_spec::parse(one, "big.json").kernels.at(0).candidates(cj::instance{{{"n", 64}}, ""}).size() == 3);
  }
  {
    auto limit = cj::job_knobs().max_candidates.scoped(5);
    CHECK_THAT(job_refusal(one), Catch::Contains("kernels[0].instances") &&
                                     Catch::Contains("3 configs x (n 2) = 2 instances = 6 (config, instance) pairs") &&
                                     Catch::Contains("limit of 5"));
  }
  // Two kernels of 6 pairs each: the second is refused, counting the first.
  std::string two = one;
  const auto kernel = two.substr(two.find("    {"), two.find("\n    }") + 6 - two.find("    {"));
  std::string second = kernel;
  second.replace(second.find("\"name\": \"k\""), 11, "\"name\": \"k2\"");
  two.insert(two.find("\n  ]"), ",\n" + second);
  auto limit = cj::job_knobs().max_candidates.scoped(11);
  CHECK_THAT(job_refusal(two), Catch::Contains("kernels[1].instances") &&
                                   Catch::Contains("(plus 6 from the kernels before it), more than the limit of 11"));
}

TEST_CASE("a job file over the size limit is refused before it is parsed, and a long kernel name is refused",
          "[job][input_limits]") {
  cotune_test::temp_dir dir{"cotune-limits"};
  const auto file = dir / "big.job.json";
  const auto text = job_with(R"({"UNROLL": [1]})", R"({"n": [64]})");
  std::ofstream(file) << text;
  REQUIRE(cj::job_spec::load(file).kernels.size() == 1);
  auto limit = cj::job_knobs().max_file_bytes.scoped(static_cast<std::int64_t>(text.size()) - 1);
  CHECK_THROWS_WITH(cj::job_spec::load(file),
                    Catch::StartsWith(file.string() + ": the job file has ") &&
                        Catch::Contains("more than the limit of " + std::to_string(text.size() - 1) + " bytes") &&
                        Catch::Contains("job.max_file_bytes, COTUNE_JOB_MAX_FILE_BYTES"));
  CHECK_THAT(job_refusal(text), Catch::Contains("job.max_file_bytes"));
  auto no_size_limit = cj::job_knobs().max_file_bytes.scoped(std::int64_t{1} << 20);
  CHECK_THAT(job_refusal(job_with(R"({"UNROLL": [1]})", R"({"n": [64]})", std::string(201, 'k'))),
             Catch::Contains("kernels[0].name") && Catch::Contains("has 201 bytes, more than 200"));
}

TEST_CASE("a database is refused for a kernel name that is not a C identifier, even correctly checksummed",
          "[job][input_limits][tuning_database]") {
  cj::tuning_database db;
  db.add(cj::database_entry::from(result_of("../../../evil", cotune::config{{"BLOCK", 64}})));
  CHECK_THAT(database_refusal(db), Catch::StartsWith("forged.db.json: entries[0]: kernel name '../../../evil' is "
                                                     "not a C identifier"));
}

TEST_CASE("save writes no database its reader refuses: it names the entry and leaves the file as it was",
          "[job][input_limits][tuning_database]") {
  cotune_test::temp_dir dir{"cotune-limits"};
  const auto file = dir / "app.db.json";
  cj::tuning_database db = database_of("gemm", 64);
  CHECK(db.entries().front().problem().empty());
  db.save(file);
  const auto before = *cotune::detail::read_file(file);
  db.add(cj::database_entry::from(result_of("gemm.v2", cotune::config{{"BLOCK", 32}})));
  auto spoofed = result_of("gemm2", cotune::config{{"BLOCK", 64}});
  spoofed.key_text = "n=1\nforged line";
  db.add(cj::database_entry::from(spoofed));
  CHECK_THROWS_WITH(db.save(file), Catch::Contains("cannot save the tuning database to " + file.string()) &&
                                       Catch::Contains("kernel 'gemm.v2'") &&
                                       Catch::Contains("kernel name 'gemm.v2' is not a C identifier"));
  CHECK(*cotune::detail::read_file(file) == before);
  // What the reader refuses in a file, save refuses in memory, with the same reason.
  cj::tuning_database one;
  one.add(cj::database_entry::from(spoofed));
  CHECK_THROWS_WITH(one.save(file), Catch::Contains("key 'n=1\\x0aforged line'") &&
                                        Catch::Contains("\"key\" holds a control character (byte 0x0a at 3)"));
  CHECK_THAT(database_refusal(one), Catch::Contains("\"key\" holds a control character (byte 0x0a at 3)"));
}

TEST_CASE("a database holds only what prints as one line and reads as JSON: hook names, string values, UTF-8",
          "[job][input_limits][tuning_database]") {
  // Each is refused by save (in memory, the entry named) and by the reader (in a forged file, the same reason).
  auto both = [](const cotune::tuning_result& r) {
    cj::tuning_database db;
    db.add(cj::database_entry::from(r));
    const std::string in_memory = db.entries().front().problem();
    CHECK_FALSE(in_memory.empty());
    CHECK_THAT(database_refusal(db), Catch::Contains(in_memory));
    return in_memory;
  };
  cotune::config hooked{{"BLOCK", 64}};
  hooked.with_pre_hook("zero\ngemm [n=2] on NVIDIA H200: {BLOCK: 1} 0.0001 ms", {});
  CHECK_THAT(both(result_of("gemm", hooked)),
             Catch::Contains("the winner: \"pre_hook\" holds a control character (byte 0x0a at 4)"));
  CHECK_THAT(both(result_of("gemm", cotune::config{{"MODE", "a\x1b[31mred"}})),
             Catch::Contains("the winner: parameter 'MODE' holds a control character (byte 0x1b at 1)"));
  // A failed candidate's message that is not UTF-8 (a compiler echoing a Latin-1 line): the file would
  // not be JSON. (A tuning's own failures are made UTF-8 when recorded; this one was set by hand.)
  auto latin1 = result_of("gemm", cotune::config{{"BLOCK", 64}});
  cotune::candidate_result failed{cotune::config{{"BLOCK", 128}}};
  failed.status = cotune::candidate_status::compile_error;
  failed.reason = "error: 'Gr\xF6\xDF"
                  "e' undeclared";
  latin1.candidates.push_back(failed);
  CHECK_THAT(cj::database_entry::from(latin1).problem(),
             Catch::Equals("\"result\" candidate 1: \"reason\" holds bytes that are not UTF-8"));
  auto device = result_of("gemm", cotune::config{{"BLOCK", 64}});
  device.made.device = "Ger\xE4t";
  // (Not forged into a file here: the writer makes it UTF-8, and the checksum then refuses the file.)
  CHECK_THAT(cj::database_entry::from(device).problem(),
             Catch::Equals("\"device\" holds bytes that are not UTF-8 (byte 0xe4 at 3)"));
  // A name that is not one is shown escaped and cut, never raw: a message cannot carry a terminal escape.
  const auto shown =
      cj::database_entry::from(result_of("gemm\x1b[31mRED" + std::string(5000, 'x'), cotune::config{{"BLOCK", 64}}))
          .problem();
  CHECK(shown.find('\x1b') == std::string::npos);
  CHECK_THAT(shown, Catch::Contains("gemm\\x1b[31mRED") && Catch::Contains("has 5012 bytes"));
  CHECK(shown.size() < 300);
  CHECK(cj::shown_text("a\tb\xFF\xC3\xA9") == "a\\x09b\\xff\xC3\xA9");
}

TEST_CASE("import_database refuses an entry no reader accepts and leaves the cache readable",
          "[job][input_limits][tuning_database]") {
  cotune_test::temp_dir dir{"cotune-limits"};
  const auto root = dir / "cache";
  REQUIRE(cj::import_database(root, database_of("gemm", 64), "") == 1);
  CHECK_THROWS_WITH(cj::import_database(root, database_of("gemm.v2", 32), ""),
                    Catch::Contains("cannot import the entry of kernel 'gemm.v2'") &&
                        Catch::Contains("kernel name 'gemm.v2' is not a C identifier"));
  CHECK(cj::imported_database(root, "").size() == 1); // still readable, still what it was
}

TEST_CASE("a database is refused for launch options out of range, in the winner or any candidate",
          "[job][input_limits][tuning_database]") {
  auto with_launch = [](cotune::launch_options lo) {
    cotune::config c{{"BLOCK", 64}};
    c.with_launch(lo);
    return c;
  };
  cj::tuning_database db;
  db.add(cj::database_entry::from(result_of("gemm", with_launch({.num_warps = -4}))));
  CHECK_THAT(database_refusal(db), Catch::Contains("entries[0]: the winner") &&
                                       Catch::Contains("num_warps = -4 is out of range; launch options are "
                                                       "integers in [1, 1048576]"));
  db = {};
  db.add(cj::database_entry::from(result_of("gemm", with_launch({.num_stages = -1}))));
  CHECK_THAT(database_refusal(db), Catch::Contains("num_stages = -1 is out of range"));
  db = {};
  db.add(cj::database_entry::from(result_of("gemm", with_launch({.num_ctas = 0}))));
  CHECK_THAT(database_refusal(db), Catch::Contains("num_ctas = 0 is out of range"));
  // A loser's config is held to the same range: a failed candidate had to be one a job could write.
  auto r = result_of("gemm", cotune::config{{"BLOCK", 64}});
  r.candidates.push_back(cotune::candidate_result{with_launch({.maxnreg = 0})});
  db = {};
  db.add(cj::database_entry::from(r));
  CHECK_THAT(database_refusal(db), Catch::Contains("\"result\" candidate 1") && Catch::Contains("maxnreg = 0"));
  // The same entries within range read back.
  db = {};
  db.add(cj::database_entry::from(result_of("gemm", with_launch({.num_warps = 8, .num_stages = 2, .maxnreg = 255}))));
  CHECK(cj::tuning_database::from_json(db.json(), "", "ok.db.json").size() == 1);
}

TEST_CASE("a database over the entry or size limit is refused before its entries are read",
          "[job][input_limits][tuning_database]") {
  cj::tuning_database db;
  db.add(cj::database_entry::from(result_of("gemm", cotune::config{{"BLOCK", 64}})));
  auto r = result_of("gemm", cotune::config{{"BLOCK", 32}});
  r.key_text = "n=128";
  db.add(cj::database_entry::from(r));
  {
    auto limit = cj::job_knobs().max_candidates.scoped(1);
    CHECK_THAT(database_refusal(db), Catch::Contains("forged.db.json: the database has 2 entries, more than the "
                                                     "limit of 1 (job.max_candidates, COTUNE_JOB_MAX_CANDIDATES)"));
  }
  cotune_test::temp_dir dir{"cotune-limits"};
  const auto file = dir / "big.db.json";
  db.save(file);
  REQUIRE(cj::tuning_database::load(file).size() == 2);
  auto limit = cj::job_knobs().max_file_bytes.scoped(100);
  CHECK_THROWS_WITH(cj::tuning_database::load(file),
                    Catch::StartsWith(file.string() + ": the tuning database has ") &&
                        Catch::Contains("more than the limit of 100 bytes (job.max_file_bytes"));
}

TEST_CASE("an import that would grow the cache's database past the entry limit is refused, and nothing is stored",
          "[job][input_limits][tuning_database]") {
  cotune_test::temp_dir dir{"cotune-limits"};
  auto entry = [](std::string key) {
    auto r = result_of("gemm", cotune::config{{"BLOCK", 64}});
    r.key_text = std::move(key);
    cj::tuning_database db;
    db.add(cj::database_entry::from(r));
    return db;
  };
  auto limit = cj::job_knobs().max_candidates.scoped(2);
  CHECK(cj::import_database(dir / "cache", entry("n=64")) == 1);
  CHECK(cj::import_database(dir / "cache", entry("n=128")) == 2);
  CHECK_THROWS_WITH(cj::import_database(dir / "cache", entry("n=256")),
                    Catch::Contains("importing 1 entries would make the cache's database hold 3, more than the limit "
                                    "of 2 (job.max_candidates"));
  CHECK(cj::imported_database(dir / "cache").size() == 2);
}

TEST_CASE("databases at the entry limit add, merge and diff in linear time", "[job][input_limits][tuning_database]") {
  // 100,000 entries (the default limit): pairwise comparison, as add() and diff() once did, takes
  // 5 x 10^9 comparisons, past this program's CTest TIMEOUT; an index takes 10^5 lookups.
  const auto n = static_cast<int>(cj::max_candidates());
  REQUIRE(n == 100000);
  cj::database_entry e = cj::database_entry::from(result_of("gemm", cotune::config{{"BLOCK", 64}}), {}, false);
  cj::tuning_database a, b;
  for (int i = 0; i < n; ++i) {
    e.key = "n=" + std::to_string(i);
    a.add(e);
    if (i % 2 == 0) b.add(e);
  }
  e.winner = cotune::config{{"BLOCK", 128}};
  e.time = {1.0, 0.9, 1.1}; // clearly slower than 0.5 (0.4-0.6): a change, not a tie within the noise
  for (int i = n; i < n + 10; ++i) {
    e.key = "n=" + std::to_string(i % (n + 5)); // 5 keys a lacks, then n=0..4 with another winner
    b.add(e);
  }
  REQUIRE(a.size() == static_cast<std::size_t>(n));
  REQUIRE(b.size() == static_cast<std::size_t>(n / 2 + 7)); // n=1 and n=3 are new to b
  std::size_t counts[5] = {}; // added, removed, changed, same, tied
  for (const auto& c : cj::diff(a, b)) ++counts[static_cast<int>(c.what)];
  CHECK(counts[static_cast<int>(cj::database_change::kind::added)] == 5);
  CHECK(counts[static_cast<int>(cj::database_change::kind::removed)] == static_cast<std::size_t>(n / 2 - 2));
  CHECK(counts[static_cast<int>(cj::database_change::kind::changed)] == 5);
  CHECK(counts[static_cast<int>(cj::database_change::kind::same)] == static_cast<std::size_t>(n / 2 - 3));
  CHECK(counts[static_cast<int>(cj::database_change::kind::tied)] == 0);
  a.merge(b);
  CHECK(a.size() == static_cast<std::size_t>(n + 5));
  CHECK(a.find("gemm", "n=3", "NVIDIA H200")->winner == cotune::config{{"BLOCK", 128}});
}

TEST_CASE("a Triton import refuses a kernel name that is not a C identifier, from the signature or the file name",
          "[job][input_limits][triton_import]") {
  CHECK(cj::import_triton(triton_file(), signature(), "add_kernel.autotune.json").kernel == "add_kernel");
  CHECK_THAT(triton_refusal(triton_file(), signature("../../../evil")),
             Catch::StartsWith("add_kernel.autotune.json: kernel name '../../../evil' is not a C identifier") &&
                 Catch::Contains("--kernel NAME"));
  cotune_test::temp_dir dir{"cotune-limits"};
  const auto file = dir / "add-kernel.autotune.json"; // Triton's file name, not a C identifier
  std::ofstream(file) << triton_file();
  const auto sig = signature(cj::triton_kernel_name(file.string()));
  CHECK_THROWS_WITH(cj::import_triton_file(file, sig), Catch::Contains("kernel name 'add-kernel' is not a C identifier"));
}

TEST_CASE("a Triton import refuses launch options Triton could not have run", "[job][input_limits][triton_import]") {
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": -4"))),
             Catch::Contains("configs_timings[0]: num_warps = -4 is out of range"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_stages\": 3", "\"num_stages\": -1"))),
             Catch::Contains("configs_timings[0]: num_stages = -1 is out of range"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_ctas\": 1", "\"num_ctas\": 0"))),
             Catch::Contains("configs_timings[0]: num_ctas = 0 is out of range"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": 6"))),
             Catch::Contains("num_warps = 6 is not a power of two in [1, 32]"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": 64"))),
             Catch::Contains("num_warps = 64 is not a power of two in [1, 32]"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": 4294967300"))),
             Catch::Contains("num_warps = 4294967300 is out of range"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": \"4\""))),
             Catch::Contains("num_warps is not an integer"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"maxnreg\": null", "\"maxnreg\": 0"))),
             Catch::Contains("maxnreg = 0 is out of range"));
  // Within range, they are kept.
  const auto e = cj::import_triton(triton_file(triton_row_with("\"maxnreg\": null", "\"maxnreg\": 128")), signature(),
                                   "add_kernel.autotune.json");
  CHECK(e.winner.launch().maxnreg == 128);
}

TEST_CASE("a Triton import bounds its configs, its times and its size", "[job][input_limits][triton_import]") {
  {
    auto limit = cj::job_knobs().max_candidates.scoped(2);
    CHECK(cj::import_triton(triton_file(triton_row, 2), signature(), "a.autotune.json").detail->candidates.size() == 2);
    CHECK_THAT(triton_refusal(triton_file(triton_row, 3)),
               Catch::Contains("configs_timings lists 3 configs, more than the limit of 2 (job.max_candidates"));
  }
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("[0.02, 0.019, 0.021]", "[0.02, 0.019, 0.021, 0.5]"))),
             Catch::Contains("configs_timings[0] has 4 times; Triton writes 1, or 3"));
  auto limit = cj::job_knobs().max_file_bytes.scoped(64);
  CHECK_THAT(triton_refusal(triton_file()), Catch::Contains("more than the limit of 64 bytes (job.max_file_bytes"));
}

TEST_CASE("a job file's expressions, lists, strings and objects are bounded before they are built",
          "[job][input_limits]") {
  // A constraint as deep as a 200 KB file can make it: refused at the nesting limit, where the
  // recursive parser once overflowed its stack (exit 139).
  const auto deep = [](const std::string& open, std::size_t n, const std::string& close) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += open;
    s += "1";
    for (std::size_t i = 0; i < n && !close.empty(); ++i) s += close;
    return s;
  };
  for (const auto& c :
       {deep("(", 100000, ")"), deep("!", 200000, ""), deep("-", 200000, ""), deep("max(1, ", 5000, ")")}) {
    const auto why =
        job_refusal(job_with(R"({"B": [1]}, "constraints": [")" + c.substr(0, 16000) + "\"]", R"({"n": [8]})"));
    CHECK_THAT(why, Catch::StartsWith("big.json:7:45: kernels[0].space.constraints[0]: ") &&
                        Catch::Contains("nests deeper than 200 levels") && Catch::Contains("write it flatter"));
    CHECK(why.size() < 400); // the expression is quoted by its start, not whole
  }
  CHECK_THAT(
      job_refusal(job_with(R"({"B": [1]}, "constraints": [")" + deep("1 + ", 5000, "") + "\"]", R"({"n": [8]})")),
      Catch::Contains("is longer than the 16384 characters an expression may have"));
  // 199 levels are an expression.
  CHECK_NOTHROW(cj::job_spec::parse(
      job_with(R"({"B": [1]}, "constraints": [")" + deep("(", 199, ")") + "\"]", R"({"n": [8]})"), "ok.json"));

  // Lists: 300 axes of one value (one config), 2,000 arguments.
  std::string many_axes = "{";
  for (int a = 0; a < 300; ++a) many_axes += (a ? ", " : "") + std::string("\"A") + std::to_string(a) + "\": [1]";
  CHECK_THAT(job_refusal(job_with(many_axes + "}", R"({"n": [8]})")),
             Catch::Contains("kernels[0].space.axes: 300 axes, more than the 256 a space may have"));
  std::string many_arguments = job_with(R"({"B": [1]})", R"({"n": [8]})");
  std::string extra;
  for (int i = 0; i < 2000; ++i)
    extra += ", {\"name\": \"s" + std::to_string(i) + "\", \"scalar\": \"int32\", \"value\": 1}";
  many_arguments.insert(many_arguments.find("\n      ],"), extra);
  CHECK_THAT(job_refusal(many_arguments),
             Catch::Contains("kernels[0].arguments: 2002 arguments, more than the 1024 a job file may list here"));

  // A string axis value of 100 KB (copied into every config and instance, once 80 times the file).
  CHECK_THAT(job_refusal(job_with(R"({"T": [")" + std::string(100000, 'x') + "\"]}", R"({"n": [8]})")),
             Catch::Contains("kernels[0].space.axes.T[0]: a string of 100000 bytes, more than the 65536 allowed"));

  // A key given twice: JSON leaves it to the reader, which would pick one in silence.
  CHECK_THAT(job_refusal(job_with(R"({"B": [1], "B": [2]})", R"({"n": [8]})")),
             Catch::Contains("kernels[0].space.axes: 'B' is given twice in this object; keep one"));
  CHECK_THAT(job_refusal(job_with(R"({"B": [1]})", R"([{"n": 8, "n": 16}])")),
             Catch::Contains("kernels[0].instances[0]: 'n' is given twice"));
  CHECK_THAT(job_refusal(job_with(R"({"B": [1]})", R"({"n": [8], "n": [16]})")),
             Catch::Contains("kernels[0].instances: 'n' is given twice"));
  auto twice = job_with(R"({"B": [1]})", R"({"n": [8]})");
  twice.insert(twice.find("\"kernels\""), "\"name\": \"a\", \"name\": \"b\", ");
  CHECK_THAT(job_refusal(twice), Catch::Contains("(top level): 'name' is given twice in this object"));
}

TEST_CASE("a job that lists 30,000 instances is read in one pass, its refusals still located", "[job][input_limits]") {
  // Each instance's position is found from the one before: locating each from the file's start made
  // this quadratic in the file's size (more than this program's CTest time limit here; minutes for a 7.8 MB file of
  // 100,000 instances).
  std::string list = "[";
  for (int i = 0; i < 30000; ++i) list += std::string(i ? ",\n" : "") + "{\"n\": " + std::to_string(i + 1) + "}";
  const auto job = cj::job_spec::parse(job_with(R"({"B": [1]})", list + "]"), "many.json");
  REQUIRE(job.kernels[0].instances.size() == 30000);
  CHECK_THAT(job.kernels[0].instances[29999].where, Catch::Equals("many.json:30013:1: kernels[0].instances[29999]"));
  CHECK_THAT(job.kernels[0].instances[1].where, Catch::Equals("many.json:15:1: kernels[0].instances[1]"));
  CHECK_THAT(job_refusal(job_with(R"({"B": [1]})", list.substr(0, list.rfind('{')) + "{\"n\": \"x\"}]")),
             Catch::StartsWith("big.json:30013:7: kernels[0].instances[29999].n: expected an integer"));
}

TEST_CASE("a database or a Triton file is refused for negative times, unbounded parameters and control characters",
          "[job][input_limits][tuning_database][triton_import]") {
  // A negative time wins every merge, diff and pick; a 100,000-byte parameter name or a newline in a
  // key (a forged line of `cotune db show`) is nothing a tuner writes.
  cj::tuning_database db;
  auto negative = result_of("gemm", cotune::config{{"BLOCK", 64}});
  negative.candidates[0].time = {-1.0, -1.0, -1.0};
  db.add(cj::database_entry::from(negative));
  CHECK_THAT(database_refusal(db), Catch::Contains("entries[0]: \"time_ms\": a time of -1 ms is not a measurement"));
  db = {};
  db.add(cj::database_entry::from(result_of("gemm", cotune::config{{std::string(100000, 'P'), 64}})));
  CHECK_THAT(database_refusal(db), Catch::Contains("the winner: parameter name 'PPPP") &&
                                       Catch::Contains("is not a C identifier of at most 200 bytes"));
  db = {};
  db.add(cj::database_entry::from(result_of("gemm", cotune::config{{"T", std::string(1 << 20, 'x')}})));
  CHECK_THAT(database_refusal(db), Catch::Contains("parameter 'T' holds a string of 1048576 bytes, more than 65536"));
  db = {};
  auto spoofed = result_of("gemm", cotune::config{{"BLOCK", 64}});
  spoofed.key_text = "n=1\n../../../x";
  db.add(cj::database_entry::from(spoofed));
  CHECK_THAT(database_refusal(db), Catch::Contains("\"key\" holds a control character (byte 0x0a at 3)"));

  CHECK_THAT(triton_refusal(triton_file(triton_row_with("[0.02, 0.019, 0.021]", "[-1, -1, -1]"))),
             Catch::Contains("configs_timings[0]: a time of -1 ms is not a measurement"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("[0.02, 0.019, 0.021]", "[1e300, 1e300, 1e300]"))),
             Catch::Contains("configs_timings[0]: a time of 1e+300 ms is not a measurement"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"num_warps\": 4", "\"num_warps\": 4, \"num_warps\": -8"))),
             Catch::Contains("configs_timings[0]: 'num_warps' is given twice in the config"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("{\"BLOCK\": 64}", "{\"BLOCK\": 64, \"BLOCK\": 128}"))),
             Catch::Contains("configs_timings[0]: 'BLOCK' is given twice in its kwargs"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("\"BLOCK\"", "\"" + std::string(100000, 'K') + "\""))),
             Catch::Contains("is not a C identifier of at most 200 bytes"));
  CHECK_THAT(triton_refusal(triton_file(triton_row_with("64", "\"" + std::string(1 << 20, 'v') + "\""))),
             Catch::Contains("holds a string of 1048576 bytes"));
  auto sig = signature();
  sig.device = "H200\n../x";
  CHECK_THAT(triton_refusal(triton_file(), sig), Catch::Contains("the device name holds a control character"));
}
