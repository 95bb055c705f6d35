// Triton's autotuning cache files (spec §3.7) imported as tuning-database entries.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/triton_import.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/knobs/knobs.hpp>

#include "../support/source_tree.hpp"
#include "../support/temp_dir.hpp"

namespace cj = cotune::batch;

namespace {

// Written as Python's json.dumps writes Triton's file: ", " and ": " separators, no indent, `Infinity`
// for a config that failed, null for unset fields. The kernel: add(x_ptr, y_ptr, out_ptr, n, MODE) with
// key=["n", "MODE"].
const std::string triton_file =
    R"({"key": [4096, "fast", "torch.float16", "torch.float16", "torch.float32"], "configs_timings": [)"
    R"([{"kwargs": {"BLOCK": 64, "SPLIT": false}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.0123, 0.0120, 0.0130]], )"
    R"([{"kwargs": {"BLOCK": 128, "SPLIT": false}, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": 128, "pre_hook": null, "ir_override": null}, [0.0101, 0.0099, 0.0110]], )"
    R"([{"kwargs": {"BLOCK": 256, "SPLIT": true}, "num_warps": 8, "num_ctas": 1, "num_stages": 4, "maxnreg": null, "pre_hook": null, "ir_override": null}, [Infinity, Infinity, Infinity]]]})";

cj::triton_signature add_signature() {
  return {.kernel = "add",
          .args = {{"x", true}, {"y", true}, {"out", true}, {"n"}, {"MODE"}},
          .key = {"n", "MODE"},
          .device = "NVIDIA H200"};
}

} // namespace

TEST_CASE("a Triton autotune file becomes a database entry with its winner and every config",
          "[job][triton_import]") {
  const cj::database_entry e = cj::import_triton(triton_file, add_signature(), "add.autotune.json");
  CHECK(e.kernel == "add");
  CHECK(e.device == "NVIDIA H200");
  // Argument order, tensors by element type, key scalars by value: the text a cotune tuner writes.
  CHECK(e.key == R"(x: float16, y: float16, out: float32, n=4096, MODE="fast")");
  cotune::config expected{{"BLOCK", 128}, {"SPLIT", false}};
  expected.with_launch(cotune::launch_options{.num_warps = 8, .num_stages = 2, .maxnreg = 128});
  CHECK(e.winner == expected);
  CHECK(e.time[0] == Approx(0.0101));
  REQUIRE(e.detail);
  REQUIRE(e.detail->candidates.size() == 3);
  CHECK(e.detail->candidates[0].status == cotune::candidate_status::ok);
  CHECK(e.detail->candidates[2].status == cotune::candidate_status::error);
  CHECK(e.detail->candidates[2].reason.find("Infinity") != std::string::npos);
  CHECK(e.detail->winner == 1);
}

TEST_CASE("Infinity inside a string is left alone, outside one it is a failed time", "[job][triton_import]") {
  CHECK(cotune::detail::normalize_nonfinite(R"({"a": "Infinity and NaN", "b": [Infinity, -Infinity, NaN, 1.5]})") ==
        R"({"a": "Infinity and NaN", "b": [null, null, null, 1.5]})");
  CHECK(cotune::detail::normalize_nonfinite(R"({"a": "say \"NaN\""})") == R"({"a": "say \"NaN\""})");
}

TEST_CASE("a Triton file that does not fit the signature is refused with what to fix", "[job][triton_import]") {
  auto message = [](const std::string& text, cj::triton_signature sig) {
    try {
      (void)cj::import_triton(text, sig, "k.autotune.json");
    } catch (const cj::database_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto sig = add_signature();
  sig.args.pop_back(); // MODE missing: the key argument is not in the signature
  CHECK(message(triton_file, sig).find("key argument 'MODE'") != std::string::npos);
  sig = add_signature();
  sig.args[2].tensor = false; // one tensor fewer than the key's dtypes
  CHECK(message(triton_file, sig).find("check --key and which arguments are tensors") != std::string::npos);
  CHECK(message("not json", add_signature()).find("not JSON") != std::string::npos);
  CHECK_THAT(message("{\"key\": [1]\n \"configs_timings\": []}", add_signature()),
             Catch::Contains(":2:2: not JSON (expected ',' or '}' after an object member"));
  CHECK(message(R"({"configs": []})", add_signature()).find("not a Triton autotune file") != std::string::npos);
  CHECK(message(R"({"key": [1, "a", "torch.complex64", "torch.float16", "torch.float32"], "configs_timings": []})",
                add_signature())
            .find("dtype 'torch.complex64'") != std::string::npos);
  const std::string all_failed =
      R"({"key": [4096, "fast", "torch.float16", "torch.float16", "torch.float32"], "configs_timings": [)"
      R"([{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1, "num_stages": 3}, [Infinity, Infinity, Infinity]]]})";
  CHECK(message(all_failed, add_signature()).find("no config ran") != std::string::npos);
  sig = add_signature();
  sig.device.clear();
  CHECK(message(triton_file, sig).find("no device") != std::string::npos);
}

TEST_CASE("the kernel name of a Triton file is its file name without .autotune.json", "[job][triton_import]") {
  CHECK(cj::triton_kernel_name("/home/u/.triton/cache/ab12/matmul_kernel.autotune.json") == "matmul_kernel");
  CHECK(cj::triton_kernel_name("add.autotune.json") == "add");
}

TEST_CASE("a host tuner adopts a winner imported from a Triton file, and tunes a key it lacks",
          "[job][triton_import][shipped_database]") {
  cotune_test::temp_dir dir;
  // A host kernel whose cost grows with COST; Triton's file says COST=3 won for n=200, although COST=1
  // would win here: adopting the import cannot be mistaken for tuning.
  const std::vector<cotune::config> configs{cotune::config{{"COST", 1}}, cotune::config{{"COST", 3}}};
  const cotune::kernel_source kernel{.name = "triton_work",
                                     .code = "extern \"C\" void work(int* out, int n) { volatile int s = 0; "
                                             "for (int i = 0; i < n * COST; ++i) s += i; out[0] = s; }\n",
                                     .entry = "work"};
  const std::string device = cotune::host_backend{}.device_name({});
  // `out` is an int*, no buffer: a host tuner's key text is "n=200" (a Triton tensor would add its dtype).
  {
    std::ofstream(dir / "triton_work.autotune.json")
        << R"({"key": [200], "configs_timings": [)"
        << R"([{"kwargs": {"COST": 1}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.5, 0.4, 0.6]], )"
        << R"([{"kwargs": {"COST": 3}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": null, "pre_hook": null, "ir_override": null}, [0.2, 0.1, 0.3]]]})";
  }
  std::ifstream in(dir / "triton_work.autotune.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  cj::tuning_database plain;
  plain.add(cj::import_triton(text,
                              {.kernel = cj::triton_kernel_name("triton_work.autotune.json"),
                               .args = {{"out"}, {"n"}},
                               .key = {"n"},
                               .device = device},
                              "triton_work.autotune.json"));
  REQUIRE(plain.entries().front().key == "n=200");
  plain.save(dir / "plain.db.json");

  using tuner_t = cotune::autotuner<void(int*, int)>;
  const cotune::tune_options<int*, int> opts{.arg_names = {"out", "n"}, .key = {"n"},
                                             .bench = cotune::bench_options{.warmup_ms = 1, .rep_ms = 5}};
  auto cache = cotune::knobs().cache.dir.scoped((dir / "app").string());
  auto path = cj::job_knobs().database.scoped((dir / "plain.db.json").string());
  tuner_t app{kernel, configs, opts};
  int out = 0;
  app(&out, 200);
  CHECK(app.measured_tunings() == 0);
  REQUIRE(app.best_config(&out, 200));
  CHECK(*app.best_config(&out, 200) == configs[1]);
  CHECK(out == 600 * 599 / 2); // COST 3 ran
  app(&out, 201); // not in the import: tuned
  CHECK(app.measured_tunings() == 1);
}

TEST_CASE("a file Triton 3.6 wrote on an H200 is imported with Triton's own winner", "[job][triton_import]") {
  // Written by benchmarks/compare/triton_cache_file.py (cache_results=True) on the H200, 2026-11-30.
  const auto text =
      cotune::detail::read_file(cotune_test::source_file("tests/batch/data/triton_3.6_cotune_import_add.autotune.json"));
  REQUIRE(text);
  const auto e = cj::import_triton(*text,
                                   {.kernel = "cotune_import_add",
                                    .args = {{"x", true}, {"y", true}, {"out", true}, {"n"}},
                                    .key = {"n"},
                                    .device = "NVIDIA H200"},
                                   "triton_3.6_cotune_import_add.autotune.json");
  CHECK(e.key == "x: float16, y: float16, out: float32, n=1048576");
  // Triton's best_config in that run: BLOCK 1024 with 2 warps (its smallest median, 7.33 us).
  CHECK(e.winner == cotune::config{{{"BLOCK", 1024}}, cotune::launch_options{.num_warps = 2}});
  REQUIRE(e.detail);
  CHECK(e.detail->candidates.size() == 6);
}
