#pragma once
/// \file The bodies of detail/mersenne_twister.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/detail/mersenne_twister.hpp>

namespace cotune::detail {

COTUNE_DECL mt19937_64::result_type mt19937_64::operator()() noexcept {
  if (i_ >= n) twist();
  result_type y = x_[i_++];
  y ^= (y >> 29) & 0x5555555555555555u;
  y ^= (y << 17) & 0x71d67fffeda60000u;
  y ^= (y << 37) & 0xfff7eee000000000u;
  return y ^ (y >> 43);
}

COTUNE_DECL void mt19937_64::twist() noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const result_type y = (x_[i] & upper) | (x_[(i + 1) % n] & lower);
    x_[i] = x_[(i + m) % n] ^ (y >> 1) ^ ((y & 1) ? a : 0);
  }
  i_ = 0;
}

} // namespace cotune::detail
