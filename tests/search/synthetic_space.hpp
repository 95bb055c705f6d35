#pragma once
// A synthetic tuning space for search tests and benchmarks: five GEMM-like parameters, a `where`
// constraint leaving holes, an out-of-resources region, a smooth cost with interactions and
// seeded noise. No device: the cost is a formula.

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune_test {

/// BLOCK x WARPS x STAGES x SPLIT x VEC, where BLOCK * VEC <= 512: 5*4*5*4*3 = 1200 points, 1120 kept.
inline std::vector<cotune::config> synthetic_configs() {
  std::vector<cotune::config> out;
  for (int block : {16, 32, 64, 128, 256})
    for (int warps : {1, 2, 4, 8})
      for (int stages : {1, 2, 3, 4, 5})
        for (int split : {1, 2, 4, 8})
          for (int vec : {1, 2, 4})
            if (block * vec <= 512)
              out.push_back(cotune::config{{"BLOCK", block}, {"WARPS", warps}, {"STAGES", stages}, {"SPLIT", split}, {"VEC", vec}});
  return out;
}

/// Time in ms of a config without noise; +inf where it "runs out of shared memory".
inline double synthetic_cost(const cotune::config& c) {
  const double block = std::log2(c.at("BLOCK").as_double()), warps = std::log2(c.at("WARPS").as_double());
  const double stages = c.at("STAGES").as_double(), split = std::log2(c.at("SPLIT").as_double());
  const double vec = std::log2(c.at("VEC").as_double());
  if (block >= 8 && stages >= 4) return INFINITY; // out of resources
  // Best near BLOCK 128, WARPS 4, STAGES 3, SPLIT 2, VEC 2, with a block x warps interaction.
  return 1.0 + 0.08 * (block - 7) * (block - 7) + 0.05 * (warps - 2) * (warps - 2) + 0.04 * (stages - 3) * (stages - 3) +
         0.06 * (split - 1) * (split - 1) + 0.03 * (vec - 1) * (vec - 1) + 0.02 * (block - 7) * (warps - 2) +
         0.01 * std::sin(3 * block + 2 * split + stages);
}

/// An evaluator with seeded multiplicative noise (1% standard deviation).
struct synthetic_evaluator {
  const std::vector<cotune::config>* configs;
  std::mt19937_64 rng;
  cotune::search_outcome operator()(std::size_t i) {
    const double t = synthetic_cost((*configs)[i]);
    if (!std::isfinite(t)) return {i, std::numeric_limits<double>::infinity(), false};
    const double noise = static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5; // uniform [-0.5, 0.5)
    return {i, t * (1.0 + 0.02 * noise * 1.7), true};
  }
};

} // namespace cotune_test
