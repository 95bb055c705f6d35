// Job files: what a valid one expands to, and refusals that name the file, line, column and field.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include <cotune/batch/batch.hpp>
#include <cotune/batch/job_spec.hpp>

namespace cj = cotune::batch;

// The folder's former namespace stays an alias (batch/batch.hpp), so code written against it compiles.
static_assert(std::is_same_v<cotune::job::job_spec, cotune::batch::job_spec> &&
              std::is_same_v<cotune::job::tuning_database, cotune::batch::tuning_database>);

namespace {

const char* valid = R"({
  "name": "gemm-sizes",
  "bench": {"warmup_ms": 1, "rep_ms": 2},
  "kernels": [
    {
      "name": "gemm",
      "code": "extern \"C\" void gemm(const float* a, float* c, int m) {}",
      "space": {
        "axes": {"BLOCK": [16, 32, 64], "VEC": [true, false]},
        "constraints": ["BLOCK <= M"],
        "launch": {"num_warps": "BLOCK / 8"}
      },
      "arguments": [
        {"name": "A", "buffer": "float32", "extent": "M * K", "fill": "random", "seed": 1},
        {"name": "C", "buffer": "float32", "extent": "M * 4", "reset": true},
        {"name": "m", "scalar": "int32", "value": "M"}
      ],
      "key": ["m"],
      "instances": {"M": [16, 64], "K": [8]}
    }
  ]
}
)";

/// The message of the job_error `text` raises.
std::string refusal(const std::string& text) {
  try {
    (void)cj::job_spec::parse(text, "job.json");
  } catch (const cj::job_error& e) {
    return e.what();
  }
  FAIL("the job was accepted");
  return {};
}

/// `valid` with `from` replaced by `to` (the first occurrence).
std::string with(std::string from, std::string to) {
  std::string t = valid;
  const auto at = t.find(from);
  REQUIRE(at != std::string::npos);
  return t.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("a job expands to configs, instances, arguments and candidates", "[job][job_spec]") {
  const auto job = cj::job_spec::parse(valid, "job.json");
  CHECK(job.name == "gemm-sizes");
  CHECK(job.rep_ms == 2.0);
  REQUIRE(job.kernels.size() == 1);
  const auto& k = job.kernels[0];
  CHECK(k.name() == "gemm");
  CHECK(k.source.entry == "cotune_job_entry");
  CHECK_THAT(k.source.code, Catch::Contains("gemm(*(float**)a[0], *(float**)a[1], *(__INT32_TYPE__*)a[2])"));
  const auto configs = k.configs();
  REQUIRE(configs.size() == 6);
  CHECK(configs[0].launch().num_warps == 2); // BLOCK 16 / 8
  REQUIRE(k.instances.size() == 2);
  CHECK(k.instances[1].text() == "M=64, K=8");
  CHECK(k.candidates(k.instances[0]).size() == 2); // BLOCK <= 16
  CHECK(k.candidates(k.instances[1]).size() == 6);
  const auto args = k.arguments_for(k.instances[1]);
  CHECK(args[0].extent == 512);
  CHECK(args[1].reset);
  CHECK(cj::key_text(args) == "A: float32, C: float32, m=64");
  CHECK(job.instance_count() == 2);
}

TEST_CASE("instances may be listed one by one", "[job][job_spec]") {
  const auto job = cj::job_spec::parse(with(R"({"M": [16, 64], "K": [8]})", R"([{"M": 32, "K": 2}])"), "job.json");
  CHECK(job.kernels[0].instances.size() == 1);
  CHECK(job.kernels[0].arguments_for(job.kernels[0].instances[0])[0].extent == 64);
}

TEST_CASE("refusals name the line, the column and the field, and say what to write", "[job][job_spec]") {
  CHECK_THAT(refusal(with("\"extent\": \"M * K\"", "\"extnet\": \"M * K\"")),
             Catch::StartsWith("job.json:14:") && Catch::Contains("kernels[0].arguments[0].extnet: unknown field 'extnet'") &&
                 Catch::Contains("extent"));
  CHECK_THAT(refusal(with("\"M * 4\"", "\"M * \"")),
             Catch::StartsWith("job.json:15:") && Catch::Contains("kernels[0].arguments[1].extent") &&
                 Catch::Contains("ends where a number or a name was expected"));
  CHECK_THAT(refusal(with("\"float32\", \"extent\": \"M * 4\"", "\"bfloat8\", \"extent\": \"M * 4\"")),
             Catch::StartsWith("job.json:15:") && Catch::Contains("kernels[0].arguments[1].buffer: unknown element type 'bfloat8'"));
  CHECK_THAT(refusal(with("\"key\": [\"m\"]", "\"key\": [\"q\"]")),
             Catch::StartsWith("job.json:18:") && Catch::Contains("kernels[0].key[0]: 'q' is not an argument"));
  CHECK_THAT(refusal(with("\"K\": [8]", "\"K\": [8, 9]")),
             Catch::Contains("kernels[0].instances") && Catch::Contains("the same tuning key") &&
                 Catch::Contains("add the argument that tells them apart to 'key'"));
  CHECK_THAT(refusal(with("\"M * K\"", "\"M * N\"")),
             Catch::StartsWith("job.json:14:") && Catch::Contains("'N' names no variable") &&
                 Catch::Contains("define the variable in every instance"));
  CHECK_THAT(refusal(with("\"BLOCK <= M\"", "\"BLOCK <= 8\"")),
             Catch::Contains("the constraints leave no config for instance M=16, K=8"));
  CHECK_THAT(refusal(with("\"num_warps\": \"BLOCK / 8\"", "\"num_warps\": \"BLOCK / 32\"")),
             Catch::StartsWith("job.json:11:") && Catch::Contains("a launch option must be in [1, 1048576]"));
  CHECK_THAT(refusal(with("\"name\": \"gemm\",", "")),
             Catch::StartsWith("job.json:5:") && Catch::Contains("missing field 'name'"));
  CHECK_THAT(refusal(with("\"rep_ms\": 2}", "\"rep_ms\": 2,}")),
             Catch::Matches("job\\.json:[0-9]+:[0-9]+: not valid JSON: expected a member name after ','.*"));
  CHECK_THAT(refusal(with("\"fill\": \"random\"", "\"fill\": \"noise\"")),
             Catch::StartsWith("job.json:14:") && Catch::Contains("use zeros, ones, random (with 'seed') or file"));
  CHECK_THAT(refusal(with("\"value\": \"M\"", "\"extent\": \"M\"")),
             Catch::StartsWith("job.json:16:") && Catch::Contains("only buffers have this field"));
}

TEST_CASE("a job file names its source file relative to itself", "[job][job_spec]") {
  CHECK_THAT(refusal(with(R"("code": "extern \"C\" void gemm(const float* a, float* c, int m) {}")", R"("source": "nowhere.cpp")")),
             Catch::Contains("kernels[0].source: cannot read") && Catch::Contains("relative to the job file"));
}

TEST_CASE("a GPU kernel's entry may be a name expression, a host kernel's may not", "[job][job_spec]") {
  CHECK_THAT(refusal(with("\"name\": \"gemm\",", "\"name\": \"gemm\", \"entry\": \"gemm<BLOCK>\",")),
             Catch::Contains("kernels[0].entry: 'gemm<BLOCK>' is not a C identifier"));
  std::string gpu = with("\"name\": \"gemm\",", "\"name\": \"gemm\", \"backend\": \"cuda\", \"entry\": \"gemm<BLOCK>\", "
                                                "\"geometry\": {\"grid\": [\"cdiv(M, BLOCK)\"]},");
  const auto job = cj::job_spec::parse(gpu, "job.json");
  CHECK(job.kernels.at(0).source.entry == "gemm<BLOCK>"); // NVRTC (or cotune precompile) instantiates it
  gpu.replace(gpu.find("gemm<BLOCK>"), 11, "gemm<BLOCK");
  CHECK_THAT(refusal(gpu), Catch::Contains("neither a C identifier nor a name expression"));
}
