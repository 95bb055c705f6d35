#pragma once
// The CPU kernel of example 02 and of the CPU benchmarks: a matrix multiply with 17 candidate
// configurations (loop order and tile sizes) whose speeds differ by more than 2x.
#include <vector>

#include <cotune/cotune.hpp>

namespace cpu_matmul {

inline const char* matmul_code = R"(
// C = A * B for n x n row-major matrices.
// ORDER 0: the textbook i-j-k loop (strided reads of B, no vectorisation).
// ORDER 1: i-k-j loops over BLOCK_I x BLOCK_K x BLOCK_J tiles (unit-stride, vectorisable inner loop).
static inline int min_int(int a, int b) { return a < b ? a : b; }

extern "C" void matmul(const float* __restrict A, const float* __restrict B, float* __restrict C, int n) {
#if ORDER == 0
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc += A[i * n + k] * B[k * n + j];
      C[i * n + j] = acc;
    }
#else
  for (int i = 0; i < n * n; ++i) C[i] = 0;
  for (int i0 = 0; i0 < n; i0 += BLOCK_I)
    for (int k0 = 0; k0 < n; k0 += BLOCK_K)
      for (int j0 = 0; j0 < n; j0 += BLOCK_J)
        for (int i = i0; i < min_int(i0 + BLOCK_I, n); ++i)
          for (int k = k0; k < min_int(k0 + BLOCK_K, n); ++k) {
            const float a = A[i * n + k];
            for (int j = j0; j < min_int(j0 + BLOCK_J, n); ++j) C[i * n + j] += a * B[k * n + j];
          }
#endif
}
)";

/// The 17 candidates: the textbook loop order once, and the tiled order over 16 tile shapes.
inline std::vector<cotune::config> configs() {
  return cotune::config_space{}
      .axis("ORDER", {0, 1})
      .axis("BLOCK_I", {16, 64})
      .axis("BLOCK_J", {64, 256})
      .axis("BLOCK_K", {8, 32, 128, 512})
      .where([](const cotune::config& c) {
        // The textbook order ignores the tiles: keep one of its configs.
        return c.at("ORDER").as_int() == 1 || (c.at("BLOCK_I").as_int() == 16 && c.at("BLOCK_J").as_int() == 64 &&
                                               c.at("BLOCK_K").as_int() == 8);
      })
      .build();
}

/// The kernel's signature as the autotuner sees it.
using signature = void(cotune::host_span<const float>, cotune::host_span<const float>, cotune::host_span<float>, int);

} // namespace cpu_matmul
