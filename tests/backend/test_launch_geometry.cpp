// Tests for cotune/backend/launch_geometry.hpp: launch_grid, the per-dimension limit checks and grid().

#include <catch2/catch.hpp>

#include <cstdint>

#include <cotune/backend/launch_geometry.hpp>

using cotune::block_dims;
using cotune::config;
using cotune::launch_grid;
using cotune::p;

TEST_CASE("the 1-D forms of launch_grid stay shorthands", "[backend][launch_geometry]") {
  constexpr launch_grid g{.x = 4};
  static_assert(g.y == 1 && g.z == 1 && g.shared_bytes == 0 && !g.block);
  constexpr launch_grid h{.x = 16, .y = 8, .shared_bytes = 4096};
  static_assert(h.z == 1 && !h.block);
  constexpr auto with = h.with_block({16, 16}).with_shared(128);
  static_assert(with.block == block_dims{16, 16, 1} && with.shared_bytes == 128 && with.x == 16);
  CHECK(launch_grid{.x = 2, .block = block_dims{8, 8, 2}}.block->threads() == 128);
}

TEST_CASE("grid() evaluates each dimension's expression under the config", "[backend][launch_geometry]") {
  const config c{{"BLOCK_X", 16}, {"TILE_X", 4}, {"BLOCK_Y", 8}};
  const int w = 4096, h = 1000;
  const launch_grid g = cotune::grid(c, cdiv(w, p("BLOCK_X") * p("TILE_X")), cdiv(h, p("BLOCK_Y")));
  CHECK(g.x == 64);
  CHECK(g.y == 125);
  CHECK(g.z == 1);
  CHECK(cotune::grid(c, 7).x == 7);
  CHECK(cotune::grid(c, 1, 2, cdiv(10, p("TILE_X"))).z == 3);
  CHECK_THROWS_WITH(cotune::grid(c, 1, p("BLOCK_Y") - 100),
                    Catch::Contains("grid dimension y is -92") && Catch::Contains("BLOCK_X: 16"));
  CHECK_THROWS_WITH(cotune::grid(c, std::int64_t{1} << 33), Catch::Contains("grid dimension x"));
}

TEST_CASE("block checks name the dimension and its limit", "[backend][launch_geometry]") {
  const cotune::launch_limits l; // CUDA's since Volta
  CHECK_NOTHROW(cotune::check_block({1024, 1, 1}, l));
  CHECK_NOTHROW(cotune::check_block({16, 16, 4}, l));
  try {
    cotune::check_block({1, 1, 65}, l);
    FAIL("a block 65 deep was accepted");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource() == "block dimension z (block 1x1x65)");
    CHECK(e.required() == 65);
    CHECK(e.limit() == 64);
  }
  try {
    cotune::check_block({1, 2048, 1}, l);
    FAIL("a block 2048 high was accepted");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("block dimension y"));
    CHECK(e.limit() == 1024);
  }
  try {
    cotune::check_block({64, 32, 1}, l); // every dimension fits, the product does not
    FAIL("2048 threads were accepted");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("threads per block"));
    CHECK(e.required() == 2048);
    CHECK(e.limit() == 1024);
  }
  try {
    cotune::check_block({32, 16, 1}, l, 256); // the kernel's own limit (registers, __launch_bounds__)
    FAIL("512 threads were accepted for a kernel limited to 256");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("threads per block for this kernel"));
    CHECK(e.limit() == 256);
  }
  CHECK_THROWS_AS(cotune::check_block({0, 1, 1}, l), cotune::launch_error);
  CHECK_THROWS_WITH(cotune::check_block({4, 0, 1}, l), Catch::Contains("block dimension y is 0"));
}

TEST_CASE("grid checks name the dimension and its limit", "[backend][launch_geometry]") {
  const cotune::launch_limits l;
  CHECK_NOTHROW(cotune::check_grid({.x = 2147483647u, .y = 65535, .z = 65535}, l));
  try {
    cotune::check_grid({.x = 1, .y = 65536}, l);
    FAIL("a grid 65536 high was accepted");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource() == "grid dimension y (grid 1x65536x1)");
    CHECK(e.limit() == 65535);
    CHECK(std::string(e.what()).find("hardware limit 65535") != std::string::npos);
  }
  try {
    cotune::check_grid({.x = 2147483648u}, l);
    FAIL("a grid beyond 2^31 - 1 was accepted");
  } catch (const cotune::out_of_resources& e) {
    CHECK(e.resource().starts_with("grid dimension x"));
  }
  CHECK_THROWS_WITH(cotune::check_grid({.x = 4, .y = 1, .z = 0}, l), Catch::Contains("grid dimension z is 0"));
  // Other limits (a HIP device's) are respected as given.
  cotune::launch_limits small;
  small.max_grid = {100, 100, 100};
  CHECK_THROWS_AS(cotune::check_grid({.x = 101}, small), cotune::out_of_resources);
}
