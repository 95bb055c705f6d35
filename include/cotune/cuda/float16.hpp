#pragma once
/// \file `cotune::cuda::float16` and `bfloat16`: host-side storage for CUDA's `__half` and
/// `__nv_bfloat16`, so that device buffers of them can be filled, read and named in tuning keys
/// ("float16", "bfloat16") without including CUDA's runtime headers.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <bit>
#include <cstdint>
#include <string_view>

namespace cotune::cuda {

namespace detail {

/// IEEE binary32 -> binary16, rounding to nearest even; overflow gives infinity, NaN stays NaN.
[[nodiscard]] constexpr std::uint16_t float_to_half_bits(float f) noexcept {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xffu;
  const std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t result = 0;
  std::uint32_t rem = 0;
  std::uint32_t halfway = 0;
  if (e <= 0) { // a subnormal half (or zero): units of 2^-24
    if (e < -10) return sign;
    const std::uint32_t full = mant | 0x800000u;
    const int shift = 14 - e;
    result = full >> shift;
    rem = full & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1);
  } else {
    result = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    halfway = 0x1000u;
  }
  if (rem > halfway || (rem == halfway && (result & 1u))) ++result; // a carry into the exponent is right
  return static_cast<std::uint16_t>(sign | result);
}

/// IEEE binary16 -> binary32 (exact).
[[nodiscard]] constexpr float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float magnitude = static_cast<float>(mant) * (1.0f / 16777216.0f); // mant x 2^-24
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/// binary32 -> bfloat16, rounding to nearest even; NaN stays NaN.
[[nodiscard]] constexpr std::uint16_t float_to_bfloat16_bits(float f) noexcept {
  const auto x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace detail

/// A half-precision float, stored as CUDA's `__half` is (pass `float16*` data as `__half*`).
struct float16 {
  static constexpr std::string_view cotune_type_name = "float16";
  std::uint16_t bits = 0;

  constexpr float16() noexcept = default;
  constexpr explicit float16(float f) noexcept : bits(detail::float_to_half_bits(f)) {}
  [[nodiscard]] static constexpr float16 from_bits(std::uint16_t b) noexcept {
    float16 h;
    h.bits = b;
    return h;
  }
  [[nodiscard]] constexpr explicit operator float() const noexcept { return detail::half_bits_to_float(bits); }
  /// Bitwise equality (so +0 != -0 and NaN == the same NaN): these are storage, not arithmetic.
  friend constexpr bool operator==(float16, float16) noexcept = default;
};

/// A bfloat16, stored as CUDA's `__nv_bfloat16` is.
struct bfloat16 {
  static constexpr std::string_view cotune_type_name = "bfloat16";
  std::uint16_t bits = 0;

  constexpr bfloat16() noexcept = default;
  constexpr explicit bfloat16(float f) noexcept : bits(detail::float_to_bfloat16_bits(f)) {}
  [[nodiscard]] static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  [[nodiscard]] constexpr explicit operator float() const noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  friend constexpr bool operator==(bfloat16, bfloat16) noexcept = default;
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

} // namespace cotune::cuda
