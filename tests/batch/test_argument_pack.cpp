// A job's run-time argument list: key text, fills, roles, and the trampoline's slots.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <cotune/core/buffer.hpp>
#include <cotune/batch/argument_pack.hpp>

#include "../support/temp_dir.hpp"

namespace cj = cotune::batch;

namespace {
std::vector<cj::argument> gemm_like() {
  cj::argument a{.name = "A", .type = cj::element_type::float32, .extent = 16, .fill = cj::fill_kind::random, .seed = 3};
  cj::argument c{.name = "C", .type = cj::element_type::float64, .extent = 4, .fill = cj::fill_kind::ones,
                 .key = true, .reset = true, .restore = false};
  cj::argument n{.name = "n", .buffer = false, .type = cj::element_type::int32, .scalar = cotune::value(std::int64_t{4}),
                 .key = true};
  cj::argument alpha{.name = "alpha", .buffer = false, .type = cj::element_type::float32, .scalar = cotune::value(0.5)};
  return {a, c, n, alpha};
}
} // namespace

TEST_CASE("the key text is the one an application's tuner writes for the same arguments", "[job][argument_pack]") {
  const cj::argument_pack p(gemm_like());
  CHECK(p.key_text() == "A: float32, C: float64[4], n=4");
  CHECK(p.element_type_name() == p.key_text());
  CHECK(cj::instance_key_text("instance: A: float32, n=4") == "A: float32, n=4");
  static_assert(cotune::Buffer<cj::argument_pack>);
}

TEST_CASE("slots point at each value in its C type, and the trampoline casts to those types", "[job][argument_pack]") {
  const cj::argument_pack p(gemm_like());
  void** slots = p.kernel_arg();
  const float* a = *static_cast<float**>(slots[0]);
  const double* c = *static_cast<double**>(slots[1]);
  CHECK(c[3] == 1.0);
  CHECK(a[0] >= -1.0f);
  CHECK(a[0] < 1.0f);
  CHECK(*static_cast<std::int32_t*>(slots[2]) == 4);
  CHECK(*static_cast<float*>(slots[3]) == 0.5f);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  const auto t = cj::host_trampoline("gemm", p.arguments());
  CHECK_THAT(t, Catch::Contains("extern \"C\" void cotune_job_entry(void** a)"));
  CHECK_THAT(t, Catch::Contains("gemm(*(float**)a[0], *(double**)a[1], *(__INT32_TYPE__*)a[2], *(float*)a[3])"));
}

TEST_CASE("random fills repeat with their seed; copies share the data", "[job][argument_pack]") {
  const cj::argument_pack p(gemm_like()), q(gemm_like());
  CHECK(std::memcmp(p.data(0), q.data(0), 16 * sizeof(float)) == 0);
  const cj::argument_pack copy = p;
  CHECK(copy.data(0) == p.data(0));
}

TEST_CASE("zero and restore act on the arguments marked reset and restore", "[job][argument_pack]") {
  auto args = gemm_like();
  args[0].restore = true;
  const cj::argument_pack p(args);
  auto* a = static_cast<float*>(p.data(0));
  auto* c = static_cast<double*>(p.data(1));
  const float first = a[0];
  const auto snap = p.snapshot();
  REQUIRE(snap.size() == 1);
  a[0] = 42.0f;
  p.zero();
  CHECK(c[0] == 0.0);
  CHECK(a[0] == 42.0f);
  p.restore(snap);
  CHECK(a[0] == first);
}

TEST_CASE("a fill file must hold exactly the buffer's bytes", "[job][argument_pack]") {
  cotune_test::temp_dir dir;
  const auto file = dir / "x.bin";
  const std::int16_t values[3] = {7, 8, 9};
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof values);
  cj::argument x{.name = "x", .type = cj::element_type::int16, .extent = 3, .fill = cj::fill_kind::file, .file = file};
  const cj::argument_pack p({x});
  CHECK(static_cast<std::int16_t*>(p.data(0))[2] == 9);
  x.extent = 4;
  CHECK_THROWS_WITH(cj::argument_pack({x}), Catch::Contains("holds 6 bytes, but 4 int16 elements take 8"));
  cj::argument s{.name = "s", .buffer = false, .type = cj::element_type::int8, .scalar = cotune::value(std::int64_t{300})};
  CHECK_THROWS_WITH(cj::argument_pack({s}), Catch::Contains("300 does not fit in int8"));
}

TEST_CASE("float16 buffers hold IEEE half bits: ones, zeros and seeded multiples of 1/1024", "[job][argument_pack]") {
  static_assert(cj::exact_half_bits(1.0f) == 0x3c00 && cj::exact_half_bits(-1.0f) == 0xbc00);
  static_assert(cj::exact_half_bits(1.0f / 1024) == 0x1400 && cj::exact_half_bits(0.75f) == 0x3a00);
  CHECK(cj::exact_half_bits(-0.5f) == 0xb800);
  CHECK(cj::size_of(cj::element_type::float16) == 2);
  CHECK(cj::element_type_from("float16") == cj::element_type::float16);
  cj::argument ones{.name = "o", .type = cj::element_type::float16, .extent = 5, .fill = cj::fill_kind::ones};
  cj::argument rnd{.name = "r", .type = cj::element_type::float16, .extent = 4096, .fill = cj::fill_kind::random, .seed = 9};
  const cj::argument_pack p({ones, rnd}), q({ones, rnd});
  const auto* o = static_cast<const std::uint16_t*>(p.data(0));
  for (int i = 0; i < 5; ++i) CHECK(o[i] == 0x3c00);
  const auto* r = static_cast<const std::uint16_t*>(p.data(1));
  CHECK(std::memcmp(r, q.data(1), 4096 * 2) == 0);
  // Every value is k / 1024 with k in [-1024, 1024): exponent in [-10, 0], |value| < 1 except -1.
  bool negative = false, positive = false;
  for (int i = 0; i < 4096; ++i) {
    const unsigned exp = (r[i] >> 10) & 0x1f;
    const bool zero = (r[i] & 0x7fff) == 0;
    CHECK((zero || (exp >= 5 && exp <= 15)));
    if (exp == 15) CHECK(r[i] == 0xbc00);
    negative = negative || (!zero && (r[i] & 0x8000));
    positive = positive || (!zero && !(r[i] & 0x8000));
  }
  CHECK(negative);
  CHECK(positive);
  CHECK(p.key_text() == "o: float16, r: float16");
  CHECK_THAT(cj::host_trampoline("k", p.arguments()), Catch::Contains("*(_Float16**)a[0]"));
}
