// A GPU kernel's launch in a job file: launch options as axes, the grid, block and shared memory
// expressions, and refusals that name the line and the field. No GPU needed: only the file is read.
#include <catch2/catch.hpp>

#include <string>

#include <cotune/batch/job_geometry.hpp>
#include <cotune/batch/job_spec.hpp>

namespace cj = cotune::batch;

namespace {

const char* cuda_job = R"json({
  "kernels": [
    {
      "name": "tile",
      "backend": "cuda",
      "code": "extern \"C\" __global__ void tile(const float* a, float* c, int m, int n) {}",
      "space": {
        "axes": {"BLOCK_M": [32, 64], "BLOCK_N": [64], "num_warps": [4, 8]},
        "constraints": ["num_warps * 32 <= BLOCK_M * 4"]
      },
      "geometry": {
        "grid": ["cdiv(N, BLOCK_N)", "cdiv(M, BLOCK_M)"],
        "shared_bytes": "BLOCK_M * BLOCK_N * 4"
      },
      "arguments": [
        {"name": "A", "buffer": "float16", "extent": "M * N", "fill": "random", "seed": 1},
        {"name": "C", "buffer": "float32", "extent": "M * N", "reset": true},
        {"name": "m", "scalar": "int32", "value": "M"},
        {"name": "n", "scalar": "int32", "value": "N"}
      ],
      "key": ["m", "n"],
      "instances": {"M": [100, 256], "N": [256]}
    }
  ]
}
)json";

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

/// `cuda_job` with `from` replaced by `to` (the first occurrence).
std::string with(const std::string& from, const std::string& to) {
  std::string t = cuda_job;
  const auto at = t.find(from);
  REQUIRE(at != std::string::npos);
  return t.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("an axis named as a launch option sets it, and the grid is evaluated per config and instance",
          "[job][job_geometry]") {
  const auto job = cj::job_spec::parse(cuda_job, "job.json");
  const auto& k = job.kernels.at(0);
  CHECK(k.backend == "cuda");
  CHECK(k.source.entry == "tile"); // a GPU kernel is launched itself, without the host trampoline
  CHECK(k.source.code.find("cotune_job_entry") == std::string::npos);
  const auto configs = k.configs();
  REQUIRE(configs.size() == 4);
  for (const auto& c : configs) {
    CHECK(c.find("num_warps") == nullptr); // a launch option, not a macro
    CHECK((c.launch().num_warps == 4 || c.launch().num_warps == 8));
  }
  // The constraint sees the launch option: num_warps 8 needs BLOCK_M 64.
  const auto& small = k.instances.at(0); // M=100, N=256
  const auto cands = k.candidates(small);
  REQUIRE(cands.size() == 3);
  for (const auto& c : cands) {
    const auto g = k.grid_for(c, small);
    const auto bm = c.at("BLOCK_M").as_int();
    CHECK(g.x == 4);                          // cdiv(256, 64)
    CHECK(g.y == static_cast<unsigned>((100 + bm - 1) / bm)); // 4 for 32, 2 for 64
    CHECK(g.z == 1);
    CHECK(g.shared_bytes == static_cast<unsigned>(bm * 64 * 4));
    CHECK_FALSE(c.launch().block.has_value()); // the config's block: num_warps x 32
  }
  REQUIRE(k.geometry);
  CHECK_THAT(k.geometry->text(), Catch::Contains("grid (cdiv(N, BLOCK_N), cdiv(M, BLOCK_M))") &&
                                     Catch::Contains("BLOCK_M * BLOCK_N * 4 bytes"));
  CHECK(cj::key_text(k.arguments_for(small)) == "A: float16, C: float32, m=100, n=256");
}

TEST_CASE("a block shape from the config is set into each config's launch options", "[job][job_geometry]") {
  const auto job = cj::job_spec::parse(with("\"shared_bytes\"", "\"block\": [\"BLOCK_M / 2\", 4], \"shared_bytes\""),
                                       "job.json");
  for (const auto& c : job.kernels[0].configs()) {
    REQUIRE(c.launch().block.has_value());
    CHECK(c.launch().block->x == c.at("BLOCK_M").as_int() / 2);
    CHECK(c.launch().block->y == 4);
    CHECK(c.launch().block->z == 1);
  }
}

TEST_CASE("a single expression is a 1-D grid", "[job][job_geometry]") {
  const auto job = cj::job_spec::parse(with("[\"cdiv(N, BLOCK_N)\", \"cdiv(M, BLOCK_M)\"]", "\"max(1, M * N / 1024)\""),
                                       "job.json");
  const auto& k = job.kernels[0];
  const auto g = k.grid_for(k.candidates(k.instances[1]).front(), k.instances[1]);
  CHECK(g.x == 64);
  CHECK(g.y == 1);
}

TEST_CASE("geometry refusals name the line, the field and what to write", "[job][job_geometry]") {
  CHECK_THAT(refusal(with("\"cdiv(M, BLOCK_M)\"", "\"cdiv(M, BLOCK_M\"")),
             Catch::StartsWith("job.json:12:") && Catch::Contains("kernels[0].geometry.grid[1]") &&
                 Catch::Contains("missing ')'"));
  CHECK_THAT(refusal(with("\"cdiv(M, BLOCK_M)\"]", "\"cdiv(M, BLOCK_M)\", 1, 1]")),
             Catch::StartsWith("job.json:12:") && Catch::Contains("kernels[0].geometry.grid") &&
                 Catch::Contains("expected 1 to 3 dimensions"));
  CHECK_THAT(refusal(with("\"cdiv(M, BLOCK_M)\"", "\"cdiv(Q, BLOCK_M)\"")),
             Catch::StartsWith("job.json:12:") && Catch::Contains("kernels[0].geometry.grid[1]") &&
                 Catch::Contains("'Q' names no variable") && Catch::Contains("instance's variables"));
  CHECK_THAT(refusal(with("\"cdiv(M, BLOCK_M)\"", "\"M / 128\"")),
             Catch::StartsWith("job.json:12:") && Catch::Contains("kernels[0].geometry.grid[1]") &&
                 Catch::Contains("gives 0") && Catch::Contains("must be in [1, 4294967295]") &&
                 Catch::Contains("M=100"));
  CHECK_THAT(refusal(with("\"BLOCK_M * BLOCK_N * 4\"", "\"0 - BLOCK_M\"")),
             Catch::StartsWith("job.json:13:") && Catch::Contains("kernels[0].geometry.shared_bytes") &&
                 Catch::Contains("dynamic shared memory must be in [0, 2^32)"));
  CHECK_THAT(refusal(with("\"shared_bytes\"", "\"block\": [\"M\"], \"shared_bytes\"")),
             Catch::StartsWith("job.json:13:") && Catch::Contains("kernels[0].geometry.block[0]") &&
                 Catch::Contains("'M' names no variable") && Catch::Contains("config's integer parameters"));
  CHECK_THAT(refusal(with("\"grid\":", "\"grdi\":")),
             Catch::StartsWith("job.json:12:") && Catch::Contains("kernels[0].geometry.grdi: unknown field 'grdi'"));
  CHECK_THAT(refusal(with("\"grid\": [\"cdiv(N, BLOCK_N)\", \"cdiv(M, BLOCK_M)\"],", "")),
             Catch::StartsWith("job.json:11:") && Catch::Contains("kernels[0].geometry: missing field 'grid'"));
  CHECK_THAT(refusal(with("\"geometry\"", "\"geometri\"")),
             Catch::Contains("kernels[0].geometri: unknown field"));
  CHECK_THAT(refusal(with("\"cdiv(N, BLOCK_N)\"", "\"cdif(N, BLOCK_N)\"")),
             Catch::Contains("kernels[0].geometry.grid[0]") && Catch::Contains("unknown function 'cdif'"));
}

TEST_CASE("a GPU kernel needs a geometry, and a host kernel takes none", "[job][job_geometry]") {
  std::string no_geometry = cuda_job;
  const auto from = no_geometry.find("\"geometry\"");
  const auto to = no_geometry.find("\"arguments\"");
  no_geometry.erase(from, to - from);
  CHECK_THAT(refusal(no_geometry), Catch::StartsWith("job.json:3:") && Catch::Contains("kernels[0]: missing field 'geometry'") &&
                                       Catch::Contains("\"grid\""));
  CHECK_THAT(refusal(with("\"backend\": \"cuda\"", "\"backend\": \"host\"")),
             Catch::Contains("kernels[0].space.axes.num_warps") && Catch::Contains("a launch option, which a host kernel"));
  std::string host = with("\"backend\": \"cuda\"", "\"backend\": \"host\"");
  host.replace(host.find(", \"num_warps\": [4, 8]"), std::string(", \"num_warps\": [4, 8]").size(), "");
  host.replace(host.find("num_warps * 32"), std::string("num_warps * 32").size(), "128");
  CHECK_THAT(refusal(host), Catch::StartsWith("job.json:11:") && Catch::Contains("kernels[0].geometry: a host kernel has no launch geometry"));
}

TEST_CASE("launch option axes take positive integers; float16 is for buffers", "[job][job_geometry]") {
  CHECK_THAT(refusal(with("\"num_warps\": [4, 8]", "\"num_warps\": [4, \"8\"]")),
             Catch::StartsWith("job.json:8:") && Catch::Contains("kernels[0].space.axes.num_warps[1]") &&
                 Catch::Contains("takes integers in [1, 1048576]"));
  CHECK_THAT(refusal(with("\"scalar\": \"int32\", \"value\": \"M\"", "\"scalar\": \"float16\", \"value\": 1")),
             Catch::StartsWith("job.json:18:") && Catch::Contains("kernels[0].arguments[2].scalar") &&
                 Catch::Contains("float16 is for buffers"));
}

TEST_CASE("config variables are the integer parameters, then the launch options", "[job][job_geometry]") {
  cotune::config c({{"BLOCK", 64}, {"FLAG", true}, {"NAME", "x"}}, cotune::launch_options{.num_warps = 8});
  CHECK(cj::config_variable(c, "BLOCK") == 64);
  CHECK(cj::config_variable(c, "FLAG") == 1);
  CHECK_FALSE(cj::config_variable(c, "NAME"));
  CHECK(cj::config_variable(c, "num_warps") == 8);
  CHECK(cj::config_variable(c, "num_stages") == 3);
  CHECK_FALSE(cj::config_variable(c, "maxnreg")); // unset
  CHECK_FALSE(cj::config_variable(c, "num_warps", false)); // a host kernel's constraints
  static_assert(cj::is_launch_option("num_ctas") && !cj::is_launch_option("BLOCK"));
}
