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
