// Figure (a): what a tuned call adds over calling the compiled kernel directly.
//
// Two Google Benchmark pairs in one program, on trivial kernels so that the call itself dominates:
// a direct call through the winner's dlsym'ed function pointer (loaded through host_backend
// compile + load of the best config) against `tuner(args...)` on a key that is already tuned. The
// program prints the medians side by side with the difference and the ratio, then counts heap
// allocations across N tuned calls through a replaced global operator new (the hot path must make
// none).
//
//   build/bench/benchmarks/bench_tuned_call [--calls=N] [any --benchmark_* flag]
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cotune/cotune.hpp>

// --- allocation counter: every global operator new goes through counted_alloc ---------------------

namespace {

std::atomic<std::uint64_t> process_allocations{0};
thread_local std::uint64_t thread_allocations = 0;

void* counted_alloc(std::size_t size, std::size_t alignment) {
  process_allocations.fetch_add(1, std::memory_order_relaxed);
  ++thread_allocations;
  if (size == 0) size = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
  // aligned_alloc wants a size that is a multiple of the alignment.
  return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void* counted_alloc_or_throw(std::size_t size, std::size_t alignment) {
  if (void* p = counted_alloc(size, alignment)) return p;
  throw std::bad_alloc();
}

} // namespace

void* operator new(std::size_t n) { return counted_alloc_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// --- the kernels and their tuners ------------------------------------------------------------------

namespace {

// Two candidates each, so that the key is tuned by measuring (a single candidate skips measurement).
const char* scalar_code = R"(
extern "C" void bump(int* out, int n) { out[0] += STEP * n; }
)";
const char* spans_code = R"(
extern "C" void scale_first(const float* x, float* y, int n) { y[0] += x[0] * (float)(STEP * n); }
)";

using scalar_signature = void(int*, int);
using spans_signature = void(cotune::host_span<const float>, cotune::host_span<float>, int);
using scalar_tuner = cotune::autotuner<scalar_signature>;
using spans_tuner = cotune::autotuner<spans_signature>;
using scalar_entry = void (*)(int*, int);
using spans_entry = void (*)(const float*, float*, int);

/// Loads `cfg` of `kernel` through the host backend (a binary-cache hit: tuning built it) and
/// returns the library handle that keeps the entry point alive.
template <class Entry>
cotune::host_backend::function load_direct(const cotune::host_backend& backend, const cotune::kernel_source& kernel,
                                           const cotune::config& cfg, Entry& entry) {
  auto fn = backend.load(backend.compile(kernel, cfg), kernel, cfg);
  entry = reinterpret_cast<Entry>(fn.symbol);
  return fn;
}

/// Everything the benchmarks share, made once in main.
struct fixture {
  std::filesystem::path cache_dir;
  cotune::knob<std::string>::scope cache_scope;
  std::vector<cotune::config> configs{cotune::config{{"STEP", 1}}, cotune::config{{"STEP", 2}}};
  cotune::bench_options quick{.warmup_ms = 1.0, .rep_ms = 5.0}; // the choice does not matter here
  // Initialised in the constructor: as default member initialisers they crash g++ 12 (an internal
  // compiler error in nothrow_spec_p on the options' defaults).
  scalar_tuner scalar;
  spans_tuner spans;
  std::vector<float> x = std::vector<float>(1024, 0.5f), y = std::vector<float>(1024, 0.0f);
  int out = 0;
  scalar_entry scalar_direct = nullptr;
  spans_entry spans_direct = nullptr;
  cotune::host_backend::function scalar_library, spans_library;

  explicit fixture(std::filesystem::path dir)
      : cache_dir(std::move(dir)), cache_scope(cotune::knobs().cache.dir, cache_dir.string()),
        scalar({.name = "bench_bump", .code = scalar_code, .entry = "bump"}, configs,
               {.arg_names = {"out", "n"}, .key = {"n"}, .cache_results = false, .bench = quick}),
        spans({.name = "bench_scale_first", .code = spans_code, .entry = "scale_first"}, configs,
              {.arg_names = {"x", "y", "n"}, .key = {"x", "y", "n"}, .cache_results = false, .bench = quick}) {
    const auto& rs = scalar.tune_now(&out, 3);
    const auto& rv = spans.tune_now(x, y, 3);
    scalar_library = load_direct(scalar.backend(), scalar.kernel(), rs.best(), scalar_direct);
    spans_library = load_direct(spans.backend(), spans.kernel(), rv.best(), spans_direct);
  }
  ~fixture() {
    std::error_code ec;
    std::filesystem::remove_all(cache_dir, ec);
  }
};

fixture* fx = nullptr;

/// Heap allocations made by this thread inside the timed loop, per iteration (must be 0).
void count_allocations(benchmark::State& state, std::uint64_t before) {
  state.counters["allocs/call"] =
      benchmark::Counter(static_cast<double>(thread_allocations - before), benchmark::Counter::kAvgIterations);
}

void direct_scalar(benchmark::State& state) {
  int out = 0;
  scalar_entry fn = fx->scalar_direct;
  const auto before = thread_allocations;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn); // reload the pointer: a direct call, not one the compiler resolved
    fn(&out, 3);
    benchmark::ClobberMemory();
  }
  count_allocations(state, before);
}

void tuned_scalar(benchmark::State& state) {
  int out = 0;
  const auto before = thread_allocations;
  for (auto _ : state) {
    fx->scalar(&out, 3);
    benchmark::ClobberMemory();
  }
  count_allocations(state, before);
}

void direct_spans(benchmark::State& state) {
  cotune::host_span<const float> x(fx->x);
  cotune::host_span<float> y(fx->y);
  spans_entry fn = fx->spans_direct;
  const auto before = thread_allocations;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn);
    fn(x.data(), y.data(), 3);
    benchmark::ClobberMemory();
  }
  count_allocations(state, before);
}

void tuned_spans(benchmark::State& state) {
  cotune::host_span<const float> x(fx->x);
  cotune::host_span<float> y(fx->y);
  const auto before = thread_allocations;
  for (auto _ : state) {
    fx->spans(x, y, 3);
    benchmark::ClobberMemory();
  }
  count_allocations(state, before);
}

/// The console output, plus each benchmark's median real and CPU time per iteration, in ns.
class collecting_reporter final : public benchmark::ConsoleReporter {
public:
  explicit collecting_reporter(bool color) : ConsoleReporter(color ? OO_ColorTabular : OO_Tabular) {}
  struct times {
    double real_ns = -1.0, cpu_ns = -1.0;
  };
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const times t{r.GetAdjustedRealTime(), r.GetAdjustedCPUTime()};
      if (r.run_type == Run::RT_Iteration) single_[r.run_name.function_name] = t;
      else if (r.aggregate_name == "median") median_[r.run_name.function_name] = t;
    }
  }
  /// The medians over repetitions if there were several, else the one run; negative if missing.
  [[nodiscard]] times get(const std::string& name) const {
    if (auto it = median_.find(name); it != median_.end()) return it->second;
    if (auto it = single_.find(name); it != single_.end()) return it->second;
    return {};
  }

private:
  std::map<std::string, times> single_, median_;
};

} // namespace

int main(int argc, char** argv) {
  // 1,000,000 calls: enough for any per-call allocation to show, and well under a second.
  std::uint64_t calls = 1'000'000;
  // A reporter made here does not read --benchmark_color: colour only on a terminal, unless turned off.
  bool color = ::isatty(STDOUT_FILENO) != 0;
  // Random interleaving of the repetitions, so that both sides of a pair see the same machine
  // state (other builds run on this host); a later command-line flag overrides it.
  std::vector<char*> args{argv[0], const_cast<char*>("--benchmark_enable_random_interleaving=true")};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a.starts_with("--calls=")) calls = std::stoull(std::string(a.substr(8)));
    else args.push_back(argv[i]);
    if (a == "--benchmark_color=false" || a == "--benchmark_color=no") color = false;
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

  char tmpl[] = "/tmp/cotune-bench-call-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  auto owned = std::make_unique<fixture>(tmpl);
  fx = owned.get();

  // Ten repetitions: the median is then stable to about a tenth of a nanosecond on this host.
  for (auto [name, fn] : {std::pair{"direct/void(int*,int)", &direct_scalar},
                          std::pair{"tuned/void(int*,int)", &tuned_scalar},
                          std::pair{"direct/void(span<const float>,span<float>,int)", &direct_spans},
                          std::pair{"tuned/void(span<const float>,span<float>,int)", &tuned_spans}})
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kNanosecond)->Repetitions(10)->ReportAggregatesOnly(true);

  collecting_reporter reporter(color);
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // Heap allocations across `calls` tuned calls, counted on this thread and in the whole process
  // (the engine's idle threads included). A `new int` first proves the counter sees allocations.
  {
    const auto t0 = thread_allocations;
    int* probe = new int(1);
    benchmark::DoNotOptimize(probe);
    delete probe;
    std::printf("\nallocation counter self-test: one `new int` counted %llu allocation(s)\n",
                static_cast<unsigned long long>(thread_allocations - t0));
  }
  cotune::host_span<const float> xs(fx->x);
  cotune::host_span<float> ys(fx->y);
  const auto p0 = process_allocations.load(), t0 = thread_allocations;
  for (std::uint64_t i = 0; i < calls; ++i) fx->scalar(&fx->out, 3);
  const auto p1 = process_allocations.load(), t1 = thread_allocations;
  for (std::uint64_t i = 0; i < calls; ++i) fx->spans(xs, ys, 3);
  const auto p2 = process_allocations.load(), t2 = thread_allocations;

  // CPU time is the figure: this host's 2 cores are shared with other builds, and a preempted
  // iteration inflates real time but not CPU time. Real time is printed beside it.
  std::printf("\nfigure (a): cost a tuned call adds over a direct call through the winner's function pointer\n");
  std::printf("(median CPU time per call over 10 interleaved repetitions, real time in brackets; target: under 50 ns "
              "added)\n\n");
  std::printf("%-58s %16s %16s %16s %7s %8s\n", "kernel signature (tuning key)", "direct ns", "tuned ns", "added ns",
              "ratio", "allocs");
  struct row {
    const char* label;
    std::string suffix;
    std::uint64_t thread_allocs, process_allocs;
  };
  std::string json = "{\"figure\": \"tuned_call_overhead\", \"calls_counted\": " + std::to_string(calls) + ", \"rows\": [";
  for (const row& r : {row{"void(int*, int) (key: n)", "void(int*,int)", t1 - t0, p1 - p0},
                       row{"void(span<const float>, span<float>, int) (key: x, y, n)",
                           "void(span<const float>,span<float>,int)", t2 - t1, p2 - p1}}) {
    const auto direct = reporter.get("direct/" + r.suffix), tuned = reporter.get("tuned/" + r.suffix);
    if (direct.cpu_ns <= 0 || tuned.cpu_ns <= 0) continue; // filtered out by --benchmark_filter
    auto cell = [](double cpu, double real) { return fmt::format("{:.2f} ({:.2f})", cpu, real); };
    std::printf("%-58s %16s %16s %16s %6.2fx %8llu\n", r.label, cell(direct.cpu_ns, direct.real_ns).c_str(),
                cell(tuned.cpu_ns, tuned.real_ns).c_str(),
                cell(tuned.cpu_ns - direct.cpu_ns, tuned.real_ns - direct.real_ns).c_str(), tuned.cpu_ns / direct.cpu_ns,
                static_cast<unsigned long long>(r.process_allocs));
    json += fmt::format("{}{{\"signature\": \"{}\", \"direct_cpu_ns\": {:.3f}, \"tuned_cpu_ns\": {:.3f}, "
                        "\"added_cpu_ns\": {:.3f}, \"ratio_cpu\": {:.3f}, \"direct_real_ns\": {:.3f}, "
                        "\"tuned_real_ns\": {:.3f}, \"added_real_ns\": {:.3f}, \"allocations_thread\": {}, "
                        "\"allocations_process\": {}}}",
                        json.back() == '[' ? "" : ", ", r.suffix, direct.cpu_ns, tuned.cpu_ns,
                        tuned.cpu_ns - direct.cpu_ns, tuned.cpu_ns / direct.cpu_ns, direct.real_ns, tuned.real_ns,
                        tuned.real_ns - direct.real_ns, r.thread_allocs, r.process_allocs);
  }
  json += "]}";
  std::printf("\nallocs: heap allocations in the whole process over %llu tuned calls per signature (must be 0)\n",
              static_cast<unsigned long long>(calls));
  std::printf("JSON: %s\n", json.c_str());
  fx = nullptr;
  owned.reset();
  benchmark::Shutdown();
  return 0;
}
