// Search strategies on real tuning spaces measured on the GPU (issue 12, item 6, the GPU half).
//
//     COTUNE_CACHE_DIR=$(mktemp -d) bench_cuda_search_spaces [plot.svg] [seeds]
//     bench_cuda_search_spaces [plot.svg] [seeds] --from TABLE.json    (offline: no GPU needed)
//     COTUNE_CACHE_DIR=$(mktemp -d) bench_cuda_search_spaces --sizes TABLE.json [--gemm-sizes 512,1024,...]
//
// --sizes (issue 37, item 3: transfer between keys) measures only the GEMM space, whole, at several
// problem sizes (M = N = K; default 512, 1024, 2048, 3072, 4096: a tuner per size, so that no size's
// order of measurement depends on another's; the binaries, compiled for the first size, come from the
// binary cache for the others) and writes TABLE.json, one space per size with its tuning key ("key":
// "M=512, N=512, K=512"), which benchmarks/search_suite/convert.py --table turns into the suite's
// multi-size data files (benchmarks/search_suite/sizes_run.sh does both, then replays the transfer).
//
// Three kernels, each with a space of 736 to 900 configs (valid or not):
//   gemm       example 04's fp16 tensor-core GEMM, 2048^3: block tile m/n/k, warps, pipeline stages
//              (configs over the opt-in shared memory fail at launch: out of resources);
//   stencil    a 5-point Jacobi step on 8192 x 8192 floats: block x/y, outputs per thread in x/y, with
//              or without a shared-memory tile (tiles over 48 KB of static shared memory fail to compile);
//   reduction  a sum of 2^26 floats: threads, items per thread, vector width, a cap on the grid, and
//              the block reduction (shared-memory tree or warp shuffles).
// The ground truth is one exhaustive tuning per space through a real autotuner over the CUDA backend
// (compiles pipelined with measurement, binaries cached under COTUNE_CACHE_DIR; the default benchmarker
// and budgets): every candidate's measured median, +inf for a failed one. It is written as JSON beside
// the plot (plot.svg -> plot.json) so that the figures can be recomputed with --from. Then, offline,
// each strategy searches each table (batches of one per compile thread, two in flight, as a tuning
// does), averaged over `seeds` seeds (default 10): the fraction of the optimum reached after a share of
// the space and the evaluations to get within 2% of it, against random sampling's (seeded, and its exact
// expectation); and the same against estimated wall seconds (the tuning replayed with each candidate's
// own compile and device time: compiles on one slot per compile thread, measurements one at a time,
// so a strategy's waits between batches count). Prints tables, one `FIGURE {json}` line
// per (space, strategy), and plots best-so-far against evaluations, one panel per space.
//
// Use an empty COTUNE_CACHE_DIR: cached binaries make compile times (and the wall estimate) near zero.
// Without a GPU (and without --from) it prints "no CUDA device: skipping" and exits 0.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/search/search.hpp>

#include "search_plot.hpp"

#define COTUNE_EXAMPLE_NO_MAIN
#include "../examples/04_tune_cuda_gemm.cpp"

#include "cuda_device.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// One measured space: every config, its measured median (+inf: failed), and what it cost.
struct space {
  std::string name, problem;
  std::vector<cotune::config> configs;
  std::vector<double> truth;      ///< ms; +inf: failed (compile error, out of resources, ...)
  std::vector<std::string> status; ///< candidate_status text
  std::vector<double> compile_ms; ///< the candidate's compile (on one compile thread)
  std::vector<double> device_ms;  ///< the device's time on it: load, warm-up, measurement
  double wall_ms = 0;             ///< the exhaustive tuning's wall time
  std::size_t from_cache = 0;     ///< binaries read from the cache instead of compiled
  std::string key{};              ///< the tuning key of a space measured at one of several sizes (--sizes)
};

// ------------------------------------------------------------------------------------------------
// The kernels and their spaces.

// Each thread computes TX x TY outputs, strided by the block so that a warp's accesses coalesce; the
// block covers (BX TX) x (BY TY). SMEM = 1 stages the block's tile and its halo in static shared memory.
const char* stencil_code = R"(
constexpr int TILE_W = BX * TX, TILE_H = BY * TY;
extern "C" __global__ void __launch_bounds__(BX * BY)
stencil5(const float* __restrict__ in, float* __restrict__ out, int W, int H) {
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
#if SMEM
  __shared__ float tile[TILE_H + 2][TILE_W + 2];
  for (int j = threadIdx.y; j < TILE_H + 2; j += BY)
    for (int i = threadIdx.x; i < TILE_W + 2; i += BX) {
      const int gx = min(max(x0 + i - 1, 0), W - 1), gy = min(max(y0 + j - 1, 0), H - 1);
      tile[j][i] = in[(size_t)gy * W + gx];
    }
  __syncthreads();
#endif
#pragma unroll
  for (int ty = 0; ty < TY; ++ty)
#pragma unroll
    for (int tx = 0; tx < TX; ++tx) {
      const int lx = threadIdx.x + tx * BX, ly = threadIdx.y + ty * BY;
      const int x = x0 + lx, y = y0 + ly;
      if (x >= W || y >= H) continue;
#if SMEM
      const float s = tile[ly + 1][lx + 1] + tile[ly + 1][lx] + tile[ly + 1][lx + 2] + tile[ly][lx + 1] + tile[ly + 2][lx + 1];
#else
      const int xl = max(x - 1, 0), xr = min(x + 1, W - 1), yu = max(y - 1, 0), yd = min(y + 1, H - 1);
      const float s = __ldg(in + (size_t)y * W + x) + __ldg(in + (size_t)y * W + xl) + __ldg(in + (size_t)y * W + xr) +
                      __ldg(in + (size_t)yu * W + x) + __ldg(in + (size_t)yd * W + x);
#endif
      out[(size_t)y * W + x] = 0.2f * s;
    }
}
)";

// A grid-stride sum: each block consumes THREADS x ITEMS x VEC elements per step (n must be a multiple
// of VEC), reduces in the block (a shared-memory tree, or warp shuffles with SHUFFLE = 1) and adds its
// sum to *out atomically. The grid is capped at MAX_BLOCKS blocks.
const char* reduction_code = R"(
extern "C" __global__ void __launch_bounds__(THREADS)
reduce_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  constexpr int STEP = THREADS * ITEMS * VEC;
  float acc = 0.0f;
  for (size_t base = (size_t)blockIdx.x * STEP; base < (size_t)n; base += (size_t)gridDim.x * STEP) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const size_t e = base + ((size_t)i * THREADS + threadIdx.x) * VEC;
      if (e >= (size_t)n) break;
#if VEC == 4
      const float4 v = *reinterpret_cast<const float4*>(x + e);
      acc += (v.x + v.y) + (v.z + v.w);
#elif VEC == 2
      const float2 v = *reinterpret_cast<const float2*>(x + e);
      acc += v.x + v.y;
#else
      acc += x[e];
#endif
    }
  }
#if SHUFFLE
  __shared__ float warp_sums[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) atomicAdd(out, acc);
  }
#else
  __shared__ float s[THREADS];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int o = THREADS / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
#endif
}
)";

// search_space's axes are a config's parameters (not its launch options), so every tuned dimension is
// a parameter here; the launch options repeat the ones the launch needs. Parameters become -D macros:
// their names must not be identifiers of the kernel (example 04's code declares STAGES and THREADS).

/// 736 configs: tiles whose warp grid divides them, with at most 16 accumulator fragments per warp
/// (more spill registers and take seconds to compile). 68 need more shared memory than an H200 has.
std::vector<cotune::config> gemm_space() {
  std::vector<cotune::config> out;
  for (int bm : {16, 32, 64, 128, 256})
    for (int bn : {32, 64, 128, 256})
      for (int bk : {16, 32, 64, 128})
        for (int warps : {2, 4, 8, 16})
          for (int stages : {2, 3, 4, 5}) {
            const int warps_m = warps / 2; // the kernel's warp grid is WARPS_M x 2
            if (bm % (warps_m * 16) != 0 || (bm / warps_m / 16) * (bn / 2 / 16) > 16) continue;
            out.emplace_back(cotune::config({{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk},
                                             {"WARPS_PER_BLOCK", warps}, {"PIPELINE_STAGES", stages}},
                                            cotune::launch_options{.num_warps = warps, .num_stages = stages}));
          }
  return out;
}

/// 864 configs: blocks of 32 to 1024 threads. The 48 shared tiles over 48 KB fail to compile.
std::vector<cotune::config> stencil_space() {
  std::vector<cotune::config> out;
  for (int bx : {8, 16, 32, 64, 128, 256})
    for (int by : {1, 2, 4, 8, 16, 32})
      for (int tx : {1, 2, 4, 8})
        for (int ty : {1, 2, 4, 8})
          for (int smem : {0, 1})
            if (bx * by >= 32 && bx * by <= 1024)
              out.emplace_back(cotune::config({{"BX", bx}, {"BY", by}, {"TX", tx}, {"TY", ty}, {"SMEM", smem}},
                                              cotune::launch_options{.block = cotune::block_dims{bx, by, 1}}));
  return out;
}

/// 900 configs, all valid. A cap of 2^20 blocks is no cap at all for 2^26 elements.
std::vector<cotune::config> reduction_space() {
  std::vector<cotune::config> out;
  for (int threads : {64, 128, 256, 512, 1024})
    for (int items : {1, 2, 4, 8, 16, 32})
      for (int vec : {1, 2, 4})
        for (int cap : {256, 1024, 4096, 16384, 1 << 20})
          for (int shuffle : {0, 1})
            out.emplace_back(cotune::config({{"THREADS", threads}, {"ITEMS", items}, {"VEC", vec}, {"MAX_BLOCKS", cap},
                                             {"SHUFFLE", shuffle}},
                                            cotune::launch_options{.threads_per_block = threads}));
  return out;
}

// ------------------------------------------------------------------------------------------------
// The ground truth: one exhaustive tuning per space.

/// Records when each candidate finished compiling and finished on the device, to recover the
/// device's time per candidate (one device: it starts a candidate when both it and the candidate
/// are ready). Events arrive on the tuning's coordinator as they happen.
class cost_observer final : public cotune::observer {
public:
  explicit cost_observer(std::size_t n) : compiled_(n), done_(n), device_ms_(n, 0.0) {}
  [[nodiscard]] const std::vector<double>& device_ms() const noexcept { return device_ms_; }

protected:
  void on_event(const cotune::tuning_event& e) override {
    const auto now = clock_type::now();
    if (const auto* c = std::get_if<cotune::candidate_compiled>(&e)) {
      if (c->index < compiled_.size()) compiled_[c->index] = now;
    } else if (const auto* m = std::get_if<cotune::candidate_measured>(&e)) {
      finish(m->index, now);
    } else if (const auto* f = std::get_if<cotune::candidate_failed>(&e)) {
      finish(f->index, now);
    }
  }

private:
  void finish(std::size_t i, clock_type::time_point now) {
    if (i >= done_.size() || done_[i] || !compiled_[i]) return; // a compile failure, or a final's re-measurement
    done_[i] = now;
    const auto start = std::max(*compiled_[i], last_done_.value_or(*compiled_[i]));
    device_ms_[i] = std::chrono::duration<double, std::milli>(now - start).count();
    last_done_ = now;
  }

  std::vector<std::optional<clock_type::time_point>> compiled_, done_;
  std::optional<clock_type::time_point> last_done_;
  std::vector<double> device_ms_;
};

template <class Tuner, class... Args>
space measure(const std::string& name, const std::string& problem, cotune::kernel_source kernel,
              std::vector<cotune::config> configs, typename Tuner::options opts, const cuda::cuda_backend& backend,
              Args... args) {
  auto costs = std::make_shared<cost_observer>(configs.size());
  opts.observers.push_back(costs);
  opts.search = cotune::search_named("exhaustive");
  opts.cache_results = false; // measure every run; no journal rewritten after each of ~900 candidates
  const auto t0 = clock_type::now();
  Tuner tuner{std::move(kernel), configs, std::move(opts), backend};
  const auto& r = tuner.tune_now(args...);
  space s{name, problem, {}, {}, {}, {}, {}, std::chrono::duration<double, std::milli>(clock_type::now() - t0).count(), 0};
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    s.configs.push_back(c.cfg);
    s.truth.push_back(c.status == cotune::candidate_status::ok ? c.time[0] : INFINITY);
    s.status.emplace_back(cotune::to_string(c.status));
    s.compile_ms.push_back(c.compile_ms);
    s.device_ms.push_back(i < costs->device_ms().size() ? costs->device_ms()[i] : 0.0);
    s.from_cache += c.binary_from_cache ? 1 : 0;
  }
  return s;
}

/// Compiles and launches a small unrelated kernel: NVRTC loaded, the compile server started and the
/// context warmed up, none of which belongs to the first space's tuning.
void warm_up(const cuda::cuda_backend& backend, const cuda::device& d) {
  const cotune::kernel_source k{.name = "search_spaces_warm_up",
                                .code = "extern \"C\" __global__ void search_spaces_warm_up(float* x) { x[threadIdx.x] = 1.0f; }\n",
                                .entry = "search_spaces_warm_up"};
  const cotune::config c({}, cotune::launch_options{.num_warps = 1});
  const auto fn = backend.load(backend.compile(k, c, d), k, c, d);
  cuda::device_buffer<float> x(d, 32);
  cuda::device_span<float> xs = x;
  backend.launch(fn, cotune::launch_grid{}, xs);
  backend.synchronize(d);
}

/// Floats in [-0.5, 0.5) from a hash of the index (fast for 2^26 of them, and the same every run).
std::vector<float> pattern(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 2654435761u >> 7) & 1023) / 1024.0f - 0.5f;
  return v;
}

/// The GEMM space (example 04's) measured whole at M = N = K = `n`, on random fp16 operands.
space measure_gemm(const cuda::cuda_backend& backend, const cuda::device& d, int n) {
  using namespace example04;
  cuda::device_buffer<cuda::float16> a(d, random_halves(std::size_t(n) * n, 1)), b(d, random_halves(std::size_t(n) * n, 2));
  cuda::device_buffer<float> c(d, std::size_t(n) * n);
  const A_span as = a.span(), bs = b.span();
  return measure<gemm_tuner>("gemm (block m/n/k, warps, stages)", fmt::format("{0}x{0}x{0} fp16 GEMM", n),
                             gemm_kernel("search_spaces_gemm"), gemm_space(), gemm_options(), backend, as, bs,
                             C_span(c.span()), n, n, n);
}

std::vector<space> measure_all(const cuda::cuda_backend& backend, const cuda::device& d) {
  using f_span = cuda::device_span<const float>;
  using o_span = cuda::device_span<float>;
  std::vector<space> out;
  out.push_back(measure_gemm(backend, d, 2048));
  {
    const int w = 8192, h = 8192;
    cuda::device_buffer<float> in(d, pattern(std::size_t(w) * h)), res(d, std::size_t(w) * h);
    using tuner = cotune::autotuner<void(f_span, o_span, int, int), cuda::cuda_backend>;
    tuner::options opts{.arg_names = {"in", "out", "W", "H"},
                        .key = {"W", "H"},
                        .grid = [](const cotune::config& c, const f_span&, const o_span&, const int& W, const int& H) {
                          using cotune::p;
                          return cotune::grid(c, cdiv(W, p("BX") * p("TX")), cdiv(H, p("BY") * p("TY")));
                        }};
    out.push_back(measure<tuner>("stencil (block x/y, outputs x/y, shared tile)",
                                 fmt::format("5-point stencil on {}x{} fp32", w, h),
                                 cotune::kernel_source{.name = "stencil5", .code = stencil_code, .entry = "stencil5"},
                                 stencil_space(), std::move(opts), backend, f_span(in.span()), o_span(res.span()), w, h));
  }
  {
    const int n = 1 << 26;
    cuda::device_buffer<float> x(d, pattern(std::size_t(n))), sum(d, 1);
    using tuner = cotune::autotuner<void(f_span, o_span, int), cuda::cuda_backend>;
    tuner::options opts{.arg_names = {"x", "out", "n"},
                        .key = {"n"},
                        .grid = [](const cotune::config& c, const f_span&, const o_span&, const int& n) {
                          using cotune::p;
                          return cotune::grid(c, cotune::min_of(cdiv(n, p("THREADS") * p("ITEMS") * p("VEC")),
                                                                p("MAX_BLOCKS")));
                        }};
    out.push_back(measure<tuner>("reduction (threads, items, vector, grid cap, shuffles)",
                                 std::string("sum of 2^26 fp32"),
                                 cotune::kernel_source{.name = "reduce_sum", .code = reduction_code, .entry = "reduce_sum"},
                                 reduction_space(), std::move(opts), backend, f_span(x.span()), o_span(sum.span()), n));
  }
  return out;
}

/// The GEMM space measured whole at each size n (M = N = K = n), in the order given.
std::vector<space> measure_gemm_sizes(const cuda::cuda_backend& backend, const cuda::device& d, const std::vector<int>& sizes) {
  std::vector<space> out;
  for (int n : sizes) {
    const auto t0 = clock_type::now();
    out.push_back(measure_gemm(backend, d, n));
    out.back().key = fmt::format("M={0}, N={0}, K={0}", n);
    const auto& s = out.back();
    fmt::print("  {}: {} configs, {} failed, optimum {:.4f} ms, {} binaries from the cache, {:.1f} s\n", s.key,
               s.configs.size(), std::count_if(s.truth.begin(), s.truth.end(), [](double t) { return !std::isfinite(t); }),
               *std::min_element(s.truth.begin(), s.truth.end()), s.from_cache,
               std::chrono::duration<double>(clock_type::now() - t0).count());
    std::fflush(stdout);
  }
  return out;
}

/// "512,1024,2048" -> {512, 1024, 2048}; empty when any item is not a size from 256 to 16384 divisible
/// by 256 (every tile of the space divides it: example 04's prune keeps all 736 configs).
std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 256 || v > 16384 || v % 256 != 0) return {};
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The table as JSON, and back.

std::string table_json(const std::vector<space>& spaces, const std::string& device, std::size_t threads) {
  cotune::json_writer w;
  w.begin_object().field("format", "cotune-search-spaces-1").field("device", device);
  w.field("date", cotune::provenance::here(device).date).field("compile_threads", threads);
  w.key("spaces").begin_array();
  for (const auto& s : spaces) {
    w.begin_object().field("name", s.name).field("problem", s.problem).field("wall_ms", s.wall_ms);
    if (!s.key.empty()) w.field("key", s.key);
    w.field("binaries_from_cache", s.from_cache).key("candidates").begin_array();
    for (std::size_t i = 0; i < s.configs.size(); ++i) {
      w.begin_object().key("config").raw(s.configs[i].json()).field("status", s.status[i]);
      if (std::isfinite(s.truth[i])) w.field("time_ms", s.truth[i]);
      else w.key("time_ms").null();
      w.field("compile_ms", s.compile_ms[i]).field("device_ms", s.device_ms[i]).end_object();
    }
    w.end_array().end_object();
  }
  return std::move(w.end_array().end_object()).take() + "\n";
}

/// The spaces of a table written by `table_json`, its device and compile threads; throws on a bad file.
std::vector<space> read_table(const std::string& path, std::string& device, std::size_t& threads) {
  using namespace simdjson;
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) throw std::runtime_error(fmt::format("cannot read the table '{}'", path));
  dom::parser parser;
  dom::element root;
  if (parser.parse(text.str()).get(root) != SUCCESS) throw std::runtime_error(fmt::format("'{}' is not JSON", path));
  std::string_view sv;
  std::uint64_t n = 0;
  if (root["format"].get(sv) != SUCCESS || sv != "cotune-search-spaces-1" || root["device"].get(sv) != SUCCESS)
    throw std::runtime_error(fmt::format("'{}' is not a table of bench_cuda_search_spaces", path));
  device = sv;
  threads = root["compile_threads"].get(n) == SUCCESS ? static_cast<std::size_t>(n) : 16;
  std::vector<space> out;
  const dom::array all = root["spaces"].get_array().value(); // named: GCC 12 takes the temporary for dangling
  for (dom::element js : all) {
    space s;
    s.name = std::string(js["name"].get_string().value());
    s.problem = std::string(js["problem"].get_string().value());
    if (std::string_view key; js["key"].get(key) == SUCCESS) s.key = key;
    s.wall_ms = js["wall_ms"].get_double().value();
    s.from_cache = static_cast<std::size_t>(js["binaries_from_cache"].get_uint64().value());
    const dom::array candidates = js["candidates"].get_array().value();
    for (dom::element c : candidates) {
      s.configs.push_back(cotune::config::from_json(c["config"].value()));
      s.status.emplace_back(c["status"].get_string().value());
      const dom::element t = c["time_ms"].value();
      s.truth.push_back(t.is_null() ? INFINITY : t.get_double().value());
      s.compile_ms.push_back(c["compile_ms"].get_double().value());
      s.device_ms.push_back(c["device_ms"].get_double().value());
    }
    out.push_back(std::move(s));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The strategies against the tables.

/// Per strategy: mean (over seeds) fraction of the optimum after each evaluation, and per seed the
/// evaluations and estimated wall seconds until within 2% of the optimum, and the wall after each.
struct run_stats {
  std::vector<double> frac;                  ///< mean over seeds, after evaluation k + 1
  std::vector<std::vector<double>> frac_seed, wall_seed; ///< per seed, after evaluation k + 1 (wall in s)
  double evals_to_2pct = 0, wall_to_2pct = 0; ///< means (the budget, or its wall, when never)
};

run_stats evaluate_strategy(const cotune::search_strategy& st, const space& sp, const cotune::search_space& geometry,
                            std::size_t budget, int seeds, std::size_t threads) {
  const double opt = *std::min_element(sp.truth.begin(), sp.truth.end());
  const std::size_t pool = std::max<std::size_t>(threads, 1), batch = std::max<std::size_t>(threads, 2);
  run_stats r;
  r.frac.assign(budget, 0.0);
  for (int seed = 1; seed <= seeds; ++seed) {
    // A tuning's batches: one candidate per compile thread (at least 2), two batches in flight. The
    // wall clock is simulated as a tuning runs: a batch is proposed when the strategy is asked (at the
    // start, or when the oldest batch in flight has been measured); its candidates compile on the
    // first free of `threads` compile slots, then are measured one at a time in proposal order, each
    // taking its own compile and device ms of the exhaustive run. A strategy that waits for each
    // small batch pays every compile's latency in turn.
    auto session = st.start(geometry, {.evaluations = budget, .seed = static_cast<std::uint64_t>(seed)}, 2);
    std::priority_queue<double, std::vector<double>, std::greater<>> slots;
    for (std::size_t t = 0; t < pool; ++t) slots.push(0.0);
    std::vector<std::vector<std::size_t>> flight;
    std::vector<std::size_t> order;
    std::vector<double> done; // ms at which each evaluation's measurement ended, in proposal order
    double now = 0, device_free = 0;
    for (;;) {
      while (flight.size() < 2) {
        auto b = session->propose(batch);
        if (b.empty()) break;
        for (std::size_t i : b) {
          const double compiled = std::max(now, slots.top()) + sp.compile_ms[i];
          slots.pop();
          slots.push(compiled);
          device_free = std::max(device_free, compiled) + sp.device_ms[i];
          order.push_back(i);
          done.push_back(device_free);
        }
        flight.push_back(std::move(b));
      }
      if (flight.empty()) break;
      for (std::size_t i : flight.front()) session->tell({i, sp.truth[i], std::isfinite(sp.truth[i])});
      now = done[std::find(order.begin(), order.end(), flight.front().back()) - order.begin()];
      flight.erase(flight.begin());
    }
    std::vector<double> frac(budget, 0.0), wall(budget, 0.0);
    double best = INFINITY;
    std::size_t reached = budget;
    for (std::size_t k = 0; k < budget; ++k) {
      if (k < order.size()) best = std::min(best, sp.truth[order[k]]);
      frac[k] = std::isfinite(best) ? opt / best : 0.0;
      wall[k] = (k < done.size() ? done[k] : done.empty() ? 0.0 : done.back()) / 1000;
      if (frac[k] >= 1 / 1.02 && reached == budget) reached = k;
      r.frac[k] += frac[k] / seeds;
    }
    r.evals_to_2pct += static_cast<double>(std::min(reached + 1, budget)) / seeds;
    r.wall_to_2pct += wall[std::min(reached, budget - 1)] / seeds;
    r.frac_seed.push_back(std::move(frac));
    r.wall_seed.push_back(std::move(wall));
  }
  return r;
}

/// Mean fraction of the optimum reached within `s` estimated wall seconds.
double frac_at_wall(const run_stats& r, double s) {
  double sum = 0;
  for (std::size_t seed = 0; seed < r.frac_seed.size(); ++seed) {
    const auto& w = r.wall_seed[seed];
    const auto k = static_cast<std::size_t>(std::upper_bound(w.begin(), w.end(), s) - w.begin());
    sum += k == 0 ? 0.0 : r.frac_seed[seed][k - 1];
  }
  return r.frac_seed.empty() ? 0.0 : sum / static_cast<double>(r.frac_seed.size());
}

void print_ground_truth(const space& s) {
  const std::size_t n = s.configs.size();
  std::map<std::string, std::size_t> by_status;
  for (const auto& st : s.status) ++by_status[st];
  std::string statuses;
  for (const auto& [st, count] : by_status) statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", count, st);
  double compile = 0, device = 0;
  for (std::size_t i = 0; i < n; ++i) {
    compile += s.compile_ms[i];
    device += s.device_ms[i];
  }
  const auto best = static_cast<std::size_t>(std::min_element(s.truth.begin(), s.truth.end()) - s.truth.begin());
  double worst = 0;
  for (double t : s.truth)
    if (std::isfinite(t)) worst = std::max(worst, t);
  fmt::print("ground truth {} ({}): {} configs ({}); exhaustive tuning {:.1f} s wall = {:.1f} ms per config; "
             "compiles {:.1f} s in all ({:.0f} ms each, {} from the cache), device {:.1f} s ({:.1f} ms each); "
             "fastest {:.4f} ms {{{}}}, slowest valid {:.4f} ms\n",
             s.name, s.problem, n, statuses, s.wall_ms / 1000, s.wall_ms / static_cast<double>(n), compile / 1000,
             compile / static_cast<double>(n), s.from_cache, device / 1000, device / static_cast<double>(n),
             s.truth[best], s.configs[best].text(), worst);
}

int usage() {
  std::fprintf(stderr, "usage: bench_cuda_search_spaces [plot.svg] [seeds] [--from TABLE.json]\n"
                       "       bench_cuda_search_spaces --sizes TABLE.json [--gemm-sizes N,N,...]  (N: 256 to 16384, "
                       "multiples of 256)\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string from, sizes_table;
  std::vector<int> sizes{512, 1024, 2048, 3072, 4096};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--from" && i + 1 < argc) from = argv[++i];
    else if (a == "--sizes" && i + 1 < argc) sizes_table = argv[++i];
    else if (a == "--gemm-sizes" && i + 1 < argc) {
      sizes = parse_sizes(argv[++i]);
      if (sizes.size() < 2) return usage();
    } else if (a.starts_with("-")) return usage();
    else pos.push_back(a);
  }
  if (!sizes_table.empty()) {
    if (!from.empty() || !pos.empty()) return usage();
    cuda::cuda_backend backend;
    const auto first = cotune_bench::first_cuda_device("bench_cuda_search_spaces");
    if (!first) return 0;
    const cuda::device& d = *first;
    const auto threads = cotune::engine::shared().compile_threads();
    warm_up(backend, d);
    fmt::print("measuring every config of the GEMM space at {} sizes on {} ({} compile threads, cache {})\n",
               sizes.size(), backend.device_name(d), threads, cotune::knobs().cache.dir.get());
    std::fflush(stdout);
    const auto t0 = clock_type::now();
    const auto spaces = measure_gemm_sizes(backend, d, sizes);
    std::ofstream out(sizes_table);
    out << table_json(spaces, backend.device_name(d), threads);
    fmt::print("ground truth table: {} ({:.1f} s)\n", sizes_table,
               std::chrono::duration<double>(clock_type::now() - t0).count());
    return out ? 0 : 1;
  }
  const std::string plot = pos.size() > 0 ? pos[0] : "cuda_search_spaces.svg";
  const int seeds = pos.size() > 1 ? std::max(5, std::atoi(pos[1].c_str())) : 10;
  const std::string table = plot.substr(0, plot.rfind('.') == std::string::npos ? plot.size() : plot.rfind('.')) + ".json";

  std::vector<space> spaces;
  std::string device;
  std::size_t threads = 0;
  if (!from.empty()) {
    try {
      spaces = read_table(from, device, threads);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_cuda_search_spaces: %s\n", e.what());
      return 1;
    }
    fmt::print("ground truth read from {} (measured on {}, {} compile threads)\n", from, device, threads);
  } else {
    cuda::cuda_backend backend;
    const auto first = cotune_bench::first_cuda_device("bench_cuda_search_spaces");
    if (!first) return 0;
    const cuda::device& d = *first;
    device = backend.device_name(d);
    threads = cotune::engine::shared().compile_threads();
    warm_up(backend, d);
    fmt::print("measuring every config of 3 spaces on {} ({} compile threads, cache {})\n", device, threads,
               cotune::knobs().cache.dir.get());
    std::fflush(stdout);
    spaces = measure_all(backend, d);
    std::ofstream(table) << table_json(spaces, device, threads);
    fmt::print("ground truth table: {}\n", table);
  }
  for (const auto& s : spaces) print_ground_truth(s);

  const std::vector<std::string> names{"random", "local", "local-pipelined", "evolution", "bayes"};
  // local-pipelined: local search proposing while a batch is in flight (not a COTUNE_SEARCH name).
  auto strategy = [](const std::string& name) {
    return name == "local-pipelined" ? std::make_shared<cotune::local_search>(4, 3, true) : cotune::search_named(name);
  };
  const double shares[] = {0.02, 0.05, 0.10, 0.25, 0.50};
  std::string svg;
  double y = 48; // below the plot's title (y 16) and the first panel's own (y - 8)
  for (const auto& sp : spaces) {
    if (std::none_of(sp.truth.begin(), sp.truth.end(), [](double t) { return std::isfinite(t); })) {
      fmt::print("\n{}: every config failed; nothing to search\n", sp.name);
      continue;
    }
    const cotune::search_space geometry(sp.configs);
    const std::size_t budget = sp.configs.size() / 2; // half the space: random's curve flattens well before
    double wall_all = 0, compile_all = 0, device_all = 0;
    for (std::size_t i = 0; i < sp.configs.size(); ++i) {
      compile_all += sp.compile_ms[i] / static_cast<double>(std::max<std::size_t>(threads, 1));
      device_all += sp.device_ms[i];
    }
    wall_all = std::max(compile_all, device_all) / 1000;
    // Random sampling's exact expectation (no seeds): the first of k good configs among n drawn without
    // replacement comes at (n + 1) / (k + 1) on average; the seeded random runs scatter around it.
    const double optimum = *std::min_element(sp.truth.begin(), sp.truth.end());
    const auto good = static_cast<std::size_t>(
        std::count_if(sp.truth.begin(), sp.truth.end(), [&](double t) { return optimum / t >= 1 / 1.02; }));
    const double expected = static_cast<double>(sp.configs.size() + 1) / static_cast<double>(good + 1);
    fmt::print("\n{}: {} configs, {} fail; {} seeds; wall estimate for all {:.1f} s (measured {:.1f} s)\n"
               "  random sampling's exact expectation to 2%: {:.1f} evaluations ({} configs within 2% of the optimum)\n",
               sp.name, sp.configs.size(),
               std::count_if(sp.truth.begin(), sp.truth.end(), [](double t) { return !std::isfinite(t); }), seeds, wall_all,
               sp.wall_ms / 1000, expected, good);
    fmt::print("  {:<15} {:>7} {:>7} {:>7} {:>7} {:>7}  {:>11} {:>9} {:>9}  {:>7} {:>7} {:>7} {:>7} {:>7}  {:>9}\n",
               "strategy", "2%", "5%", "10%", "25%", "50%", "evals to 2%", "vs random", "vs E[rnd]", "w2%", "w5%", "w10%",
               "w25%", "w50%", "s to 2%");
    std::vector<std::pair<std::string, std::vector<double>>> lines;
    double random_evals = 0;
    for (const auto& name : names) {
      const auto r = evaluate_strategy(*strategy(name), sp, geometry, budget, seeds, threads);
      if (name == "random") random_evals = r.evals_to_2pct;
      auto at = [&](double share) {
        const auto k = std::max<std::size_t>(1, static_cast<std::size_t>(share * static_cast<double>(sp.configs.size())));
        return r.frac[std::min(k, r.frac.size()) - 1];
      };
      cotune::json_writer fig;
      fig.begin_object().field("figure", "search_spaces").field("device", device).field("space", sp.name);
      fig.field("strategy", name).field("configs", sp.configs.size()).field("seeds", seeds).field("budget", budget);
      fig.key("fraction_at_share").begin_object();
      std::string row = fmt::format("  {:<15}", name);
      for (double s : shares) {
        row += fmt::format(" {:>7.4f}", at(s));
        fig.field(fmt::format("{}", s), at(s));
      }
      fig.end_object().key("fraction_at_wall_share").begin_object();
      row += fmt::format("  {:>11.1f} {:>8.0f}% {:>8.0f}% ", r.evals_to_2pct, 100 * r.evals_to_2pct / random_evals,
                         100 * r.evals_to_2pct / expected);
      for (double s : shares) {
        row += fmt::format(" {:>7.4f}", frac_at_wall(r, s * wall_all));
        fig.field(fmt::format("{}", s), frac_at_wall(r, s * wall_all));
      }
      row += fmt::format("  {:>9.2f}", r.wall_to_2pct);
      fig.end_object().field("evals_to_2pct", r.evals_to_2pct).field("vs_random", r.evals_to_2pct / random_evals);
      fig.field("random_expected_evals_to_2pct", expected).field("vs_random_expected", r.evals_to_2pct / expected);
      fig.field("wall_s_to_2pct", r.wall_to_2pct).field("wall_s_all", wall_all).end_object();
      fmt::print("{}\n", row);
      fmt::print("FIGURE {}\n", fig.str());
      lines.emplace_back(name, r.frac);
    }
    svg += cotune_bench::svg_panel(fmt::format("{} ({} configs, {})", sp.name, sp.configs.size(), sp.problem), lines, 60, y, 560, 200,
                                       {0.5, 0.8, 0.9, 0.98, 1.0}); // real spaces start lower than the cost models
    y += 250;
  }
  fmt::print("\ncolumns: 2% .. 50%: mean fraction of the optimum (optimum / best found) after that share of the\n"
             "space was evaluated; evals to 2%: mean evaluations until the best found is within 2% of the optimum\n"
             "(the budget, half the space, when never); vs random: that count against random sampling's in the same\n"
             "run; vs E[rnd]: against random sampling's exact expectation (n + 1) / (k + 1);\n"
             "w2% .. w50%: the fraction reached within that share of the estimated wall time of evaluating the whole\n"
             "space; s to 2%: estimated wall seconds to within 2%. Wall estimate: the tuning replayed with each\n"
             "config's compile and device ms of the exhaustive run (batches of one per compile thread, two in flight,\n"
             "compiles on that many slots, measurements one at a time): a strategy's waits between batches count.\n");
  std::ofstream f(plot);
  f << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="660" height="{}" font-family="sans-serif">)", y) << "\n"
    << fmt::format(R"(<text x="60" y="16" font-size="14">best-so-far (fraction of the optimum) against evaluations, {}</text>)",
                   device)
    << "\n"
    << svg << "\n</svg>\n";
  fmt::print("plot: {}\n", plot);
  return f ? 0 : 1;
}
