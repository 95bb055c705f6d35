// Tests of the host-side 16-bit float storage types.

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include <cotune/core/buffer.hpp>
#include <cotune/cuda/float16.hpp>

namespace cuda = cotune::cuda;

TEST_CASE("float16 converts like IEEE binary16, rounding to nearest even", "[cuda][float16]") {
  static_assert(cuda::float16(1.0f).bits == 0x3c00);
  static_assert(cuda::float16(-2.0f).bits == 0xc000);
  static_assert(cuda::float16(65504.0f).bits == 0x7bff);                // the largest finite half
  static_assert(cuda::float16(65520.0f).bits == 0x7c00);                // rounds up to infinity
  static_assert(cuda::float16(5.960464477539063e-8f).bits == 0x0001);   // the smallest subnormal
  static_assert(cuda::float16(2.98e-8f).bits == 0x0000);                // below half of it: zero
  static_assert(cuda::float16(6.103515625e-5f).bits == 0x0400);         // the smallest normal
  static_assert(cuda::float16(1.0f + 1.0f / 2048).bits == 0x3c00);      // a tie rounds to even (down)
  static_assert(cuda::float16(1.0f + 3.0f / 2048).bits == 0x3c02);      // a tie rounds to even (up)
  static_assert(static_cast<float>(cuda::float16::from_bits(0x3555)) == 0.333251953125f);
  static_assert(static_cast<float>(cuda::float16::from_bits(0x0001)) == 5.960464477539063e-8f);
  CHECK(cuda::float16(1.0f).bits == 0x3c00);
  CHECK(std::isinf(static_cast<float>(cuda::float16(std::numeric_limits<float>::infinity()))));
  CHECK(std::isnan(static_cast<float>(cuda::float16(std::numeric_limits<float>::quiet_NaN()))));
  for (int b = 0; b < 0x7c00; ++b) { // every finite positive half survives a round trip
    auto h = cuda::float16::from_bits(static_cast<std::uint16_t>(b));
    REQUIRE(cuda::float16(static_cast<float>(h)).bits == b);
  }
}

TEST_CASE("bfloat16 keeps float's exponent and rounds the mantissa to nearest even", "[cuda][float16]") {
  static_assert(cuda::bfloat16(1.0f).bits == 0x3f80);
  static_assert(static_cast<float>(cuda::bfloat16(3.0f)) == 3.0f);
  static_assert(cuda::bfloat16(1.0f + 1.0f / 256).bits == 0x3f80); // tie, to even
  static_assert(cuda::bfloat16(1.0f + 3.0f / 256).bits == 0x3f82);
  CHECK(std::isnan(static_cast<float>(cuda::bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("16-bit floats are named in tuning keys", "[cuda][float16]") {
  static_assert(cotune::element_type_name<cuda::float16>() == "float16");
  static_assert(cotune::element_type_name<cuda::bfloat16>() == "bfloat16");
  SUCCEED();
}
