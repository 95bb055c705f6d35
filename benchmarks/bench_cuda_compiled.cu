// The kernels of bench_cuda_compiled.cpp: example 10's reduction and its table, plus a plain
// `kernel<<<grid, block, 0, stream>>>` launch of each instantiation, the baseline a hand-written
// program would use.
#include "../examples/10_compiled_kernels.cu"

#include <cuda_runtime.h>

#include <vector>

namespace bench_compiled {

/// Launches one instantiation of example10::sum with the triple-chevron syntax.
using raw_launch = void (*)(unsigned grid, cudaStream_t stream, const int* x, unsigned long long* total, int n);

/// One launcher per candidate of example10::sum_kernels(), in its order.
std::vector<raw_launch> raw_launches() {
  std::vector<raw_launch> out;
  std::vector<cotune::gpu::compiled_param> unused;
  auto point = [&](const std::vector<cotune::gpu::compiled_param>&, auto block, auto items, auto shuffle) {
    constexpr int b = decltype(block)::value, i = decltype(items)::value;
    constexpr bool s = decltype(shuffle)::value;
    out.push_back([](unsigned grid, cudaStream_t stream, const int* x, unsigned long long* total, int n) {
      example10::sum<b, i, s><<<grid, b, 0, stream>>>(x, total, n);
    });
  };
  using cotune::cuda::axis;
  cotune::gpu::detail::for_each_point(point, unused, std::tuple<>{}, axis<64, 128, 256, 512>{"BLOCK"},
                                      axis<1, 4, 16>{"ITEMS"}, axis<false, true>{"SHUFFLE"});
  return out;
}

} // namespace bench_compiled
