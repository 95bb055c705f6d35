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

  result_type operator()() noexcept;

private:
  static constexpr std::size_t n = 312, m = 156;
  static constexpr result_type f = 6364136223846793005u, a = 0xb5026f5aa96619e9u;
  static constexpr result_type upper = ~result_type{0} << 31, lower = ~upper; // r = 31

  void twist() noexcept;

  std::array<result_type, n> x_{};
  std::size_t i_ = n; ///< the next word to temper; n: twist first
};

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/mersenne_twister.ipp>
#endif
