// 05: tune a 2-D convolution (a 4096 x 4096 image, a 7 x 7 filter) and launch it on your own stream.
// The filter lives in __constant__ memory: tune_options::on_load writes it into every loaded binary
// before it first runs (each candidate while tuning, the winner alone after a warm start). Each block
// is 2-D (BLOCK_X x BLOCK_Y threads, derived from the parameters), computes TILE_X x TILE_Y outputs
// per thread, and reads the image straight from global memory or through a shared-memory tile
// (USE_SHARED): 48 candidates. The grid is an expression of the parameters. The tuned call runs on a
// stream the program created, as a framework's stream would be; its output is checked against a CPU
// reference. Without a GPU it says so and exits 0.
//
//   05_tune_cuda_conv2d [size]     the image is size x size (default 4096)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>

namespace cuda = cotune::cuda;

namespace example05 {

constexpr int filter_radius = 3;
constexpr int filter_width = 2 * filter_radius + 1;

// out(x, y) = sum over the filter of in(x + j - R, y + i - R) * filter[i][j], zero outside the image.
// Threads of a block cover consecutive x (coalesced); each thread computes TILE_X x TILE_Y outputs
// strided by the block's size. With USE_SHARED the block first loads its outputs' input tile plus a
// halo of R into shared memory.
inline const char* conv_code = R"(
constexpr int R = FILTER_RADIUS;
constexpr int FW = 2 * R + 1;
constexpr int OUT_W = BLOCK_X * TILE_X;
constexpr int OUT_H = BLOCK_Y * TILE_Y;

__constant__ float filter[FW * FW]; // written by tune_options::on_load

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  const int x0 = blockIdx.x * OUT_W, y0 = blockIdx.y * OUT_H;
#if USE_SHARED
  constexpr int SW = OUT_W + 2 * R, SH = OUT_H + 2 * R;
  __shared__ float tile[SH][SW];
  for (int k = threadIdx.y * BLOCK_X + threadIdx.x; k < SW * SH; k += BLOCK_X * BLOCK_Y) {
    const int sy = k / SW, sx = k % SW;
    const int gx = x0 + sx - R, gy = y0 + sy - R;
    tile[sy][sx] = (gx >= 0 && gx < w && gy >= 0 && gy < h) ? in[(long long)gy * w + gx] : 0.0f;
  }
  __syncthreads();
#endif
#pragma unroll
  for (int ty = 0; ty < TILE_Y; ++ty)
#pragma unroll
    for (int tx = 0; tx < TILE_X; ++tx) {
      const int lx = tx * BLOCK_X + threadIdx.x, ly = ty * BLOCK_Y + threadIdx.y;
      const int x = x0 + lx, y = y0 + ly;
      if (x >= w || y >= h) continue;
      float acc = 0.0f;
#pragma unroll
      for (int i = 0; i < FW; ++i)
#pragma unroll
        for (int j = 0; j < FW; ++j) {
#if USE_SHARED
          acc += tile[ly + i][lx + j] * filter[i * FW + j];
#else
          const int gx = x + j - R, gy = y + i - R;
          if (gx >= 0 && gx < w && gy >= 0 && gy < h) acc += in[(long long)gy * w + gx] * filter[i * FW + j];
#endif
        }
      out[(long long)y * w + x] = acc;
    }
}
)";

/// The kernel, optionally under another name (a unique name defeats every cache, for tests).
inline cotune::kernel_source conv_kernel(const std::string& name = "conv2d") {
  std::string code = conv_code;
  code.replace(code.find("conv2d("), 6, name);
  return {.name = name,
          .code = code,
          .entry = name,
          .options = {"-DFILTER_RADIUS=" + std::to_string(filter_radius)}};
}

/// 48 candidates: 2-D blocks of 16 or 32 x 4, 8 or 16 threads, 1 or 2 outputs per thread along each
/// axis, shared memory on or off. The block's shape is derived from the parameters.
inline std::vector<cotune::config> conv_configs() {
  using namespace cotune::expr::literals; // "NAME"_p: the config's parameter NAME, as an expression
  return cotune::config_space{}
      .axis("BLOCK_X", {16, 32})
      .axis("BLOCK_Y", {4, 8, 16})
      .axis("TILE_X", {1, 2})
      .axis("TILE_Y", {1, 2})
      .axis("USE_SHARED", {0, 1})
      .derive("block_x", "BLOCK_X"_p)
      .derive("block_y", "BLOCK_Y"_p)
      .build();
}

using image_in = cuda::device_span<const float>;
using image_out = cuda::device_span<float>;
using conv_tuner = cotune::autotuner<void(image_in, image_out, int, int), cuda::cuda_backend>;

/// Names, the key (the image's size), the grid as an expression of the parameters, and on_load,
/// which writes `filter` (filter_width x filter_width values, row-major; it must outlive the tuner)
/// into each loaded binary's __constant__ memory. A hook names only the leading arguments it uses:
/// on_load here takes the module alone. (Data alone needs no hook at all:
/// `.constants = {{"filter", filter}}` copies it and writes it at every load.)
inline conv_tuner::options conv_options(const std::vector<float>& filter) {
  return {.arg_names = {"in", "out", "w", "h"},
          .key = {"w", "h"},
          .on_load = [&filter](const cotune::module_view& m) { m.global<float>("filter").copy_from(filter); },
          .grid =
              [](const cotune::config& c, const image_in&, const image_out&, const int& w, const int& h) {
                using namespace cotune::expr::literals;
                return cotune::grid(c, cdiv(w, "BLOCK_X"_p * "TILE_X"_p), cdiv(h, "BLOCK_Y"_p * "TILE_Y"_p));
              },
          .cache_results = true};
}

/// A normalised Gaussian-like filter: positive weights summing to 1.
inline std::vector<float> make_filter() {
  std::vector<float> f(filter_width * filter_width);
  float sum = 0;
  for (int i = 0; i < filter_width; ++i)
    for (int j = 0; j < filter_width; ++j) {
      const float di = float(i - filter_radius), dj = float(j - filter_radius);
      sum += f[std::size_t(i * filter_width + j)] = std::exp(-(di * di + dj * dj) / 8.0f);
    }
  for (auto& v : f) v /= sum;
  return f;
}

/// A w x h image of values in [0, 1).
inline std::vector<float> make_image(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> img(std::size_t(w) * std::size_t(h));
  for (auto& v : img) v = dist(rng);
  return img;
}

/// The CPU reference (zero outside the image, as the kernel).
inline std::vector<float> conv_reference(const std::vector<float>& in, const std::vector<float>& filter, int w, int h) {
  std::vector<float> out(in.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float acc = 0.0f;
      for (int i = 0; i < filter_width; ++i) {
        const int gy = y + i - filter_radius;
        if (gy < 0 || gy >= h) continue;
        for (int j = 0; j < filter_width; ++j) {
          const int gx = x + j - filter_radius;
          if (gx >= 0 && gx < w) acc += in[std::size_t(gy) * w + gx] * filter[std::size_t(i * filter_width + j)];
        }
      }
      out[std::size_t(y) * w + x] = acc;
    }
  return out;
}

/// The largest difference between two images.
inline double max_abs_error(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double e = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    if (!(d <= e)) e = d; // a NaN is the largest error
  }
  return e;
}

// Inputs in [0, 1) and weights summing to 1 keep every output in [0, 1); 49 products summed in
// another order (and fused multiply-adds on the GPU) differ by a few ulps, far below this, while a
// wrong tile, halo or filter is off by a sizeable fraction of 1.
constexpr double tolerance = 1e-4;

} // namespace example05

#ifndef COTUNE_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  using namespace example05;
  const auto devices = cuda::devices();
  if (devices.empty()) {
    std::printf("no CUDA device: skipping (%s)\n", cuda::availability().message.c_str());
    return 0;
  }
  const int size = argc > 1 ? std::atoi(argv[1]) : 4096;
  if (size <= 0) {
    std::fprintf(stderr, "05_tune_cuda_conv2d: the size must be positive (got '%s')\n", argv[1]);
    return 2;
  }
  const int w = size, h = size;
  const auto& d = devices.front();
  const auto filter = make_filter();
  const auto image = make_image(w, h, 5);
  cuda::device_buffer<float> in(d, image), out(d, image.size());

  // The program's own stream (a framework would hand one over): the tuned call launches there, in
  // order with the program's other work on it.
  const auto& ctx = cuda::driver().context(d.ordinal);
  ctx.make_current();
  CUstream stream = nullptr;
  ctx.check(ctx.api().stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  conv_tuner tuner{conv_kernel(), conv_configs(), conv_options(filter)};
  std::printf("cotune example 05: tuning a %dx%d convolution with a %dx%d filter in constant memory, %zu candidates, "
              "on %s (cache: %s)\n",
              w, h, filter_width, filter_width, tuner.configs().size(), tuner.backend().device_name(d).c_str(),
              cotune::knobs().cache.dir.get().c_str());

  // The first call of a key tunes (after waiting for the stream; never on it), then launches there.
  tuner.on(stream)(in, out, w, h);
  ctx.check(ctx.api().stream_synchronize(stream), "cuStreamSynchronize");
  const auto& result = tuner.tune_now(in, out, w, h); // the key is tuned: this only hands back its result
  if (result.from_cache)
    std::printf("tuning result from the disk cache (measured on %s at %s)\n", result.made.device.c_str(),
                result.made.date.c_str());
  else
    std::printf("tuned in %.3f s\n", result.wall_ms / 1000.0);
  cotune::printing_observer::print_table(stdout, result);

  // The tuned call again, on the stream, into an output filled with NaN: what it holds afterwards was
  // written by this launch.
  out.copy_from(std::vector<float>(image.size(), std::numeric_limits<float>::quiet_NaN()));
  tuner.on(stream)(in, out, w, h); // a table lookup and a launch
  ctx.check(ctx.api().stream_synchronize(stream), "cuStreamSynchronize");
  const auto got = out.to_vector();
  (void)ctx.api().stream_destroy(stream);

  const double err = max_abs_error(got, conv_reference(image, filter, w, h));
  const double ms = result.candidates[result.winner].time[0];
  std::printf("best config: {%s}", result.shown(result.best()).c_str());
  if (ms > 0) std::printf(", %.0f GB/s of image in and out", 2.0 * double(image.size()) * sizeof(float) / (ms * 1e6));
  std::printf("\ntuned kernel output vs CPU reference: max abs error %.3g (tolerance %.3g) -> %s\n", err, tolerance,
              err <= tolerance ? "OK" : "WRONG");
  return err <= tolerance ? 0 : 1;
}
#endif
