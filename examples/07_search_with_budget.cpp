// 07: tune a space too large to measure whole. A tiled matrix transpose has 72 candidate configs
// (two tile sizes and a loop order); a best-first local search with a budget of 12 evaluations
// compiles and measures at most 12 of them, and the rest are reported as `not evaluated`. The same
// seed proposes the same candidates run after run. (COTUNE_SEARCH and COTUNE_SEARCH_BUDGET choose a
// strategy and a budget for every tuner without changing code; docs/search.md compares them.)
#include <cstdio>
#include <memory>
#include <vector>

#include <cotune/cotune.hpp>

static const char* transpose_code = R"(
// out = transpose(in) for an n x n row-major matrix, in TILE_I x TILE_J tiles; ORDER 1 walks a
// tile's columns in the outer loop instead of its rows.
static inline int min_int(int a, int b) { return a < b ? a : b; }

extern "C" void transpose(const float* __restrict in, float* __restrict out, int n) {
  for (int i0 = 0; i0 < n; i0 += TILE_I)
    for (int j0 = 0; j0 < n; j0 += TILE_J) {
#if ORDER == 0
      for (int i = i0; i < min_int(i0 + TILE_I, n); ++i)
        for (int j = j0; j < min_int(j0 + TILE_J, n); ++j) out[j * n + i] = in[i * n + j];
#else
      for (int j = j0; j < min_int(j0 + TILE_J, n); ++j)
        for (int i = i0; i < min_int(i0 + TILE_I, n); ++i) out[j * n + i] = in[i * n + j];
#endif
    }
}
)";

using signature = void(cotune::host_span<const float>, cotune::host_span<float>, int);

int main() {
  constexpr int n = 512;
  constexpr std::size_t budget = 12;
  cotune::kernel_source kernel{.name = "transpose", .code = transpose_code, .entry = "transpose"};
  auto configs = cotune::config_space{}
                     .axis("TILE_I", {1, 4, 8, 16, 32, 64})
                     .axis("TILE_J", {1, 4, 8, 16, 32, 64})
                     .axis("ORDER", {0, 1})
                     .build();

  cotune::autotuner<signature> tuner{kernel, configs,
                                     {.arg_names = {"in", "out", "n"},
                                      .key = {"n"},
                                      .bench = cotune::bench_options{.warmup_ms = 2, .rep_ms = 10},
                                      // 4 random starts, then 3 neighbours of the best so far per batch
                                      .search = std::make_shared<cotune::local_search>(4, 3),
                                      .search_budget = cotune::search_settings{.evaluations = budget, .seed = 1}}};

  std::vector<float> in(n * n), out(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) in[i] = static_cast<float>(i);

  const auto& result = tuner.tune_now(in, out, n);
  cotune::printing_observer::print_table(stdout, result); // the unevaluated ones are counted in one line

  std::size_t evaluated = 0;
  for (const auto& c : result.candidates)
    if (c.status != cotune::candidate_status::not_evaluated) ++evaluated;
  std::printf("%zu of %zu candidates evaluated (budget %zu); best {%s}\n", evaluated, configs.size(), budget,
              result.shown(result.best()).c_str());

  tuner(in, out, n); // the tuned call
  bool right = true;
  for (int i = 0; i < n && right; ++i)
    for (int j = 0; j < n; ++j)
      if (out[j * n + i] != in[i * n + j]) {
        right = false;
        break;
      }
  const bool winner_evaluated = result.candidates[result.winner].status == cotune::candidate_status::ok;
  std::printf("tuned transpose: %s\n", right ? "OK" : "WRONG");
  return right && winner_evaluated && evaluated >= 1 && evaluated <= budget ? 0 : 1;
}
