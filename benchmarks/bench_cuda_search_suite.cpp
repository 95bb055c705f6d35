// A new H200 ground truth for the search suite (issue 35, item 3): a space with a real categorical
// parameter, measured whole.
//
//     COTUNE_CACHE_DIR=$(mktemp -d) bench_cuda_search_suite OUT_DIR
//
// histogram: 256 bins of 2^26 bytes (skewed: the AND of two hashed bytes, so low values are common and
// same-bin atomics contend). METHOD selects one of four unrelated algorithms:
//   0  every item an atomic add on the global bins;
//   1  one shared-memory histogram per block, flushed with one global atomic per bin;
//   2  one shared histogram per warp (no contention between warps), summed at the flush;
//   3  warp aggregation: the lanes holding the same byte find each other (__match_any_sync) and one
//      of them adds their count to the block's shared histogram.
// with THREADS per block, ITEMS per thread per step, VEC bytes per load (1, or 4 as a uchar4) and a cap
// on the grid (MAX_BLOCKS; 2^20 is no cap). 4 x 5 x 6 x 2 x 4 = 960 configs.
//
// Before measuring, each METHOD x VEC is checked against a histogram computed on the host (a wrong
// kernel's times would be no ground truth): a mismatch exits 1 and writes nothing. Then one exhaustive
// tuning through a real autotuner over the CUDA backend (the default benchmarker; every candidate's
// median, failures recorded) writes OUT_DIR/suite_h200_spaces.json in bench_cuda_search_spaces' table
// format, which benchmarks/search_suite/convert.py --table turns into a data file of the suite.
// Without a GPU it prints "no CUDA device: skipping" and exits 0.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>

#include "cuda_device.hpp"

namespace cuda = cotune::cuda;

namespace {

const char* histogram_code = R"(
__device__ __forceinline__ void count(unsigned int* h, unsigned int* bins, unsigned int v, bool ok) {
#if METHOD == 0
  if (ok) atomicAdd(bins + v, 1u);
#elif METHOD == 1
  if (ok) atomicAdd(h + v, 1u);
#elif METHOD == 2
  if (ok) atomicAdd(h + (threadIdx.x / 32) * 256 + v, 1u);
#else
  const unsigned int lane = threadIdx.x % 32;
  const unsigned int peers = __match_any_sync(0xffffffffu, ok ? v : 256u + lane);
  if (ok && lane == (unsigned int)(__ffs(peers) - 1)) atomicAdd(h + v, (unsigned int)__popc(peers));
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
histogram256(const unsigned char* __restrict__ data, unsigned int* __restrict__ bins, int n) {
  constexpr int STEP = THREADS * ITEMS * VEC;
#if METHOD == 2
  constexpr int COPIES = THREADS / 32;
#else
  constexpr int COPIES = 1;
#endif
#if METHOD != 0
  __shared__ unsigned int h[COPIES * 256];
  for (int i = threadIdx.x; i < COPIES * 256; i += THREADS) h[i] = 0;
  __syncthreads();
#else
  unsigned int* h = nullptr;
#endif
  // Every lane runs every step (no early exit): METHOD 3's warp-wide match needs all 32.
  for (size_t base = (size_t)blockIdx.x * STEP; base < (size_t)n; base += (size_t)gridDim.x * STEP) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const size_t e = base + ((size_t)i * THREADS + threadIdx.x) * VEC;
      const bool ok = e < (size_t)n;
#if VEC == 4
      const uchar4 v = ok ? *reinterpret_cast<const uchar4*>(data + e) : make_uchar4(0, 0, 0, 0);
      count(h, bins, v.x, ok);
      count(h, bins, v.y, ok);
      count(h, bins, v.z, ok);
      count(h, bins, v.w, ok);
#else
      count(h, bins, ok ? data[e] : 0u, ok);
#endif
    }
  }
#if METHOD != 0
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += THREADS) {
    unsigned int s = 0;
    for (int c = 0; c < COPIES; ++c) s += h[c * 256 + b];
    if (s) atomicAdd(bins + b, s);
  }
#endif
}
)";

using u8_span = cuda::device_span<const unsigned char>;
using u32_span = cuda::device_span<unsigned int>;
using tuner_type = cotune::autotuner<void(u8_span, u32_span, int), cuda::cuda_backend>;

constexpr int n_bytes = 1 << 26;

/// 960 configs; every one compiles (METHOD 2's shared copies are at most 32 KB).
std::vector<cotune::config> histogram_space() {
  std::vector<cotune::config> out;
  for (int method : {0, 1, 2, 3})
    for (int threads : {64, 128, 256, 512, 1024})
      for (int items : {1, 2, 4, 8, 16, 32})
        for (int vec : {1, 4})
          for (int cap : {132, 528, 2112, 1 << 20}) // 1, 4 and 16 blocks per H200 SM; no cap
            out.emplace_back(cotune::config({{"METHOD", method}, {"THREADS", threads}, {"ITEMS", items}, {"VEC", vec},
                                             {"MAX_BLOCKS", cap}},
                                            cotune::launch_options{.threads_per_block = threads}));
  return out;
}

cotune::launch_grid grid_of(const cotune::config& c, int n) {
  const auto step = c.at("THREADS").as_int() * c.at("ITEMS").as_int() * c.at("VEC").as_int();
  return cotune::launch_grid{.x = std::min<unsigned>(static_cast<unsigned>(cotune::cdiv(std::int64_t(n), step)),
                                                     static_cast<unsigned>(c.at("MAX_BLOCKS").as_int()))};
}

std::vector<unsigned char> skewed_bytes(std::size_t n) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = static_cast<std::uint32_t>(i * 2654435761u), b = static_cast<std::uint32_t>((i + 7) * 40503u * 2246822519u);
    v[i] = static_cast<unsigned char>((a >> 13) & (b >> 17) & 0xffu);
  }
  return v;
}

const cotune::kernel_source kernel{.name = "histogram256", .code = histogram_code, .entry = "histogram256"};

/// Each METHOD x VEC against the host's histogram; false (and a message) on any mismatch.
bool check_methods(const cuda::cuda_backend& backend, const cuda::device& d, const u8_span& data,
                   const std::vector<unsigned char>& host) {
  std::vector<unsigned int> want(256, 0);
  for (unsigned char b : host) ++want[b];
  bool ok = true;
  for (int method : {0, 1, 2, 3})
    for (int vec : {1, 4}) {
      const cotune::config c({{"METHOD", method}, {"THREADS", 256}, {"ITEMS", 4}, {"VEC", vec}, {"MAX_BLOCKS", 528}},
                             cotune::launch_options{.threads_per_block = 256});
      cuda::device_buffer<unsigned int> bins(d, std::size_t{256});
      bins.zero();
      const auto fn = backend.load(backend.compile(kernel, c, d), kernel, c, d);
      u8_span in = data;
      u32_span counts = bins.span();
      int n = n_bytes;
      backend.launch(fn, grid_of(c, n_bytes), in, counts, n);
      backend.synchronize(d);
      if (bins.to_vector() != want) {
        std::fprintf(stderr, "histogram METHOD=%d VEC=%d counts differ from the host's: not a ground truth\n", method, vec);
        ok = false;
      }
    }
  return ok;
}

} // namespace

int main(int argc, char** argv) try {
  const std::filesystem::path out = argc > 1 ? argv[1] : ".";
  cuda::cuda_backend backend;
  const auto first = cotune_bench::first_cuda_device("bench_cuda_search_suite");
  if (!first) return 0;
  const cuda::device& d = *first;
  const std::string device = backend.device_name(d);
  const auto host = skewed_bytes(n_bytes);
  cuda::device_buffer<unsigned char> data(d, host);
  cuda::device_buffer<unsigned int> bins(d, std::size_t{256});
  const u8_span ds = data.span();
  if (!check_methods(backend, d, ds, host)) return 1;
  fmt::print("histogram: all 4 methods x 2 vector widths agree with the host; measuring 960 configs on {}\n", device);
  std::fflush(stdout);

  tuner_type::options opts{.arg_names = {"data", "bins", "n"},
                           .key = {"n"},
                           .grid = [](const cotune::config& c, const u8_span&, const u32_span&, const int& n) {
                             return grid_of(c, n);
                           }};
  opts.search = cotune::search_named("exhaustive");
  opts.cache_results = false;
  const auto configs = histogram_space();
  const auto t0 = std::chrono::steady_clock::now();
  tuner_type tuner{kernel, configs, std::move(opts), backend};
  const u32_span bs = bins.span();
  const auto& r = tuner.tune_now(ds, bs, n_bytes);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  cotune::json_writer w;
  w.begin_object().field("format", "cotune-search-spaces-1").field("device", device);
  w.field("date", cotune::provenance::here(device).date).field("compile_threads", cotune::engine::shared().compile_threads());
  w.key("spaces").begin_array();
  w.begin_object().field("name", "histogram (method, threads, items, vector, grid cap)");
  w.field("problem", "256-bin histogram of 2^26 skewed bytes").field("wall_ms", wall_ms);
  w.field("binaries_from_cache", std::size_t{0}).key("candidates").begin_array();
  std::size_t failed = 0;
  for (const auto& c : r.candidates) {
    w.begin_object().key("config").raw(c.cfg.json()).field("status", std::string(cotune::to_string(c.status)));
    if (c.status == cotune::candidate_status::ok) w.field("time_ms", c.time[0]);
    else {
      w.key("time_ms").null();
      ++failed;
    }
    w.field("compile_ms", c.compile_ms).field("device_ms", 0.0).end_object();
  }
  w.end_array().end_object().end_array().end_object();
  std::filesystem::create_directories(out);
  const auto file = out / "suite_h200_spaces.json";
  std::ofstream(file) << std::move(w).take() << "\n";
  fmt::print("histogram: {} configs ({} failed) in {:.1f} s; table: {}\n", r.candidates.size(), failed, wall_ms / 1000,
             file.string());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_cuda_search_suite: %s\n", e.what());
  return 1;
}
