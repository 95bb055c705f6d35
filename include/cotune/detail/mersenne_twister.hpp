#pragma once
/// \file `cotune::detail::mt19937_64`: the 64-bit Mersenne Twister, the engine of every search
/// strategy. The standard fixes `std::mt19937_64`'s sequence for a given seed, and this engine gives
/// exactly that sequence (a test compares them), so that proposals stay what they were; it exists so
/// that <random>, one of the heaviest standard headers, stays out of every file that includes cotune.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <array>
#include <cstddef>
#include <cstdint>

namespace cotune::detail {

/// std::mt19937_64's algorithm and parameters (a UniformRandomBitGenerator: the standard's
/// distributions accept it).
class mt19937_64 {
public:
  using result_type = std::uint64_t;
  static constexpr result_type default_seed = 5489u;

  explicit mt19937_64(result_type seed = default_seed) noexcept {
    x_[0] = seed;
    for (std::size_t i = 1; i < n; ++i) x_[i] = f * (x_[i - 1] ^ (x_[i - 1] >> 62)) + i;
  }

  [[nodiscard]] static constexpr result_type min() noexcept { return 0; }
  [[nodiscard]] static constexpr result_type max() noexcept { return ~result_type{0}; }

  result_type operator()() noexcept {
    if (i_ >= n) twist();
    result_type y = x_[i_++];
    y ^= (y >> 29) & 0x5555555555555555u;
    y ^= (y << 17) & 0x71d67fffeda60000u;
    y ^= (y << 37) & 0xfff7eee000000000u;
    return y ^ (y >> 43);
  }

private:
  static constexpr std::size_t n = 312, m = 156;
  static constexpr result_type f = 6364136223846793005u, a = 0xb5026f5aa96619e9u;
  static constexpr result_type upper = ~result_type{0} << 31, lower = ~upper; // r = 31

  void twist() noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      const result_type y = (x_[i] & upper) | (x_[(i + 1) % n] & lower);
      x_[i] = x_[(i + m) % n] ^ (y >> 1) ^ ((y & 1) ? a : 0);
    }
    i_ = 0;
  }

  std::array<result_type, n> x_{};
  std::size_t i_ = n; ///< the next word to temper; n: twist first
};

} // namespace cotune::detail
