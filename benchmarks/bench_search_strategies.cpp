// Search strategies against random sampling on tuning spaces of 500 to 5,000 configs (issue 12, item 6).
//
//     bench_search_strategies [plot.svg] [seeds]
//
// Each space's ground truth (every config's time) is computed once, then each strategy searches it
// with seeded 1% measurement noise, averaged over `seeds` seeds (default 10). Printed per space and
// strategy: the fraction of the optimum reached (optimum / true time of the best measured) after a
// share of the space, and the evaluations needed to get within 2% of the optimum, against random
// sampling's in the same run. The SVG plots best-so-far against evaluations. The spaces here are
// cost models shaped like real kernels (a GEMM, a stencil, a reduction; with constraints and an
// out-of-resources region), so the program runs on any CPU in seconds; a ground truth measured on a
// GPU plugs in as another `space` (a config list and a time per config).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <cotune/search/search.hpp>

#include "search_plot.hpp"

using namespace cotune;

namespace {

struct space {
  std::string name;
  std::vector<config> configs;
  std::vector<double> truth; ///< ms; +inf: fails (out of resources)
};

double lg(const config& c, const char* p) { return std::log2(c.at(p).as_double()); }

space gemm() {
  space s{"gemm (tile m/n/k, warps, stages, split-k)", {}, {}};
  for (int bm : {16, 32, 64, 128, 256})
    for (int bn : {16, 32, 64, 128, 256})
      for (int bk : {16, 32, 64})
        for (int warps : {2, 4, 8})
          for (int stages : {2, 3, 4, 5})
            for (int split : {1, 2, 4})
              if (bm * bn <= 128 * 256 && bm * bn >= 32 * 32) {
                config c{{"BM", bm}, {"BN", bn}, {"BK", bk}, {"WARPS", warps}, {"STAGES", stages}, {"SPLIT", split}};
                const double smem = (bm + bn) * bk * stages * 2.0 / 1024; // KiB
                const double m = lg(c, "BM"), n = lg(c, "BN"), k = lg(c, "BK"), w = lg(c, "WARPS");
                double t = 1.0 + 0.06 * (m - 7) * (m - 7) + 0.06 * (n - 7) * (n - 7) + 0.05 * (k - 5) * (k - 5) +
                           0.04 * (w - 2 - (m + n - 14) / 2) * (w - 2 - (m + n - 14) / 2) +
                           0.03 * (stages - 4) * (stages - 4) + 0.05 * (lg(c, "SPLIT") - 1) * (lg(c, "SPLIT") - 1) +
                           0.02 * std::sin(m * 3 + n * 2 + k + stages);
                s.configs.push_back(c);
                s.truth.push_back(smem > 160 ? INFINITY : t);
              }
  return s;
}

space stencil() {
  space s{"stencil (block x/y, unroll, vector, cache tiling)", {}, {}};
  for (int bx : {8, 16, 32, 64, 128})
    for (int by : {1, 2, 4, 8, 16})
      for (int unroll : {1, 2, 4, 8})
        for (int vec : {1, 2, 4})
          for (const char* tiling : {"none", "shared", "registers"})
            if (bx * by >= 32 && bx * by <= 1024) {
              config c{{"BX", bx}, {"BY", by}, {"UNROLL", unroll}, {"VEC", vec}, {"TILING", tiling}};
              const double x = lg(c, "BX"), y = lg(c, "BY"), u = lg(c, "UNROLL"), v = lg(c, "VEC");
              const double tile = std::string(tiling) == "shared" ? 0.85 : std::string(tiling) == "registers" ? 0.92 : 1.0;
              double t = tile * (1.0 + 0.05 * (x - 5) * (x - 5) + 0.07 * (y - 2) * (y - 2) + 0.04 * (u - 1) * (u - 1) +
                                 0.06 * (v - 1) * (v - 1) + 0.03 * (x + y - 7) * (x + y - 7) +
                                 0.015 * std::cos(x * 2 + u * 3 + v));
              s.configs.push_back(c);
              s.truth.push_back(std::string(tiling) == "registers" && unroll * vec >= 16 ? INFINITY : t);
            }
  return s;
}

space reduction() {
  space s{"reduction (threads, items/thread, vector, passes, atomics)", {}, {}};
  for (int threads : {32, 64, 128, 256, 512, 1024})
    for (int items : {1, 2, 4, 8, 16, 32})
      for (int vec : {1, 2, 4})
        for (int passes : {1, 2, 3})
          for (bool atomics : {false, true})
            if (items >= vec) {
              config c{{"THREADS", threads}, {"ITEMS", items}, {"VEC", vec}, {"PASSES", passes}, {"ATOMICS", atomics}};
              const double th = lg(c, "THREADS"), it = lg(c, "ITEMS"), v = lg(c, "VEC");
              double t = 1.0 + 0.04 * (th - 8) * (th - 8) + 0.05 * (it - 3) * (it - 3) + 0.08 * (v - 2) * (v - 2) +
                         0.1 * (passes - (atomics ? 1 : 2)) * (passes - (atomics ? 1 : 2)) + (atomics ? 0.03 : 0.0) +
                         0.02 * std::sin(th + 2 * it + passes);
              s.configs.push_back(c);
              s.truth.push_back(t);
            }
  return s;
}

/// Mean over seeds of optimum / (true time of the best measured so far), after each evaluation.
std::vector<double> curve(const search_strategy& st, const space& sp, const search_space& geometry, std::size_t budget,
                          int seeds, std::vector<double>& evals_to_2pct) {
  const double opt = *std::min_element(sp.truth.begin(), sp.truth.end());
  std::vector<double> mean(budget, 0.0);
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 noise(static_cast<std::uint64_t>(seed) * 7919);
    auto evaluate = [&](std::size_t i) -> search_outcome {
      if (!std::isfinite(sp.truth[i])) return {i, std::numeric_limits<double>::infinity(), false};
      const double u = static_cast<double>(noise() >> 11) * 0x1.0p-53 - 0.5;
      return {i, sp.truth[i] * (1 + 0.0346 * u), true}; // 1% standard deviation
    };
    const auto h = run_search(st, geometry, {.evaluations = budget, .seed = static_cast<std::uint64_t>(seed)}, evaluate, 8, 2);
    double best_measured = INFINITY, best_true = INFINITY, reached = static_cast<double>(budget);
    for (std::size_t k = 0; k < budget; ++k) {
      if (k < h.size() && h[k].valid() && h[k].time_ms < best_measured) {
        best_measured = h[k].time_ms;
        best_true = sp.truth[h[k].index];
      }
      const double frac = std::isfinite(best_true) ? opt / best_true : 0.0;
      if (frac >= 1 / 1.02 && reached == static_cast<double>(budget)) reached = static_cast<double>(k + 1);
      mean[k] += frac / seeds;
    }
    evals_to_2pct.push_back(reached);
  }
  return mean;
}

} // namespace

int main(int argc, char** argv) {
  const std::string plot = argc > 1 ? argv[1] : "search_strategies.svg";
  const int seeds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
  const std::vector<space> spaces{gemm(), stencil(), reduction()};
  const std::vector<std::string> names{"random", "local", "local-pipelined", "evolution", "bayes"};
  // local-pipelined: local search proposing while a batch is in flight (not a COTUNE_SEARCH name).
  auto strategy = [](const std::string& name) {
    return name == "local-pipelined" ? std::make_shared<local_search>(4, 3, true) : search_named(name);
  };
  std::string svg;
  double y = 48; // below the plot's title (y 16) and the first panel's own (y - 8)
  for (const auto& sp : spaces) {
    const search_space geometry(sp.configs);
    const std::size_t budget = sp.configs.size() / 2; // half the space: random's curve flattens well before
    fmt::print("\n{}: {} configs, {} fail; {} seeds, 1% noise\n", sp.name, sp.configs.size(),
               std::count_if(sp.truth.begin(), sp.truth.end(), [](double t) { return !std::isfinite(t); }), seeds);
    fmt::print("  {:<15} {:>8} {:>8} {:>8} {:>8} {:>8}  {:>14} {:>10}\n", "strategy", "2%", "5%", "10%", "25%", "50%",
               "evals to 2%", "vs random");
    std::vector<std::pair<std::string, std::vector<double>>> lines;
    double random_evals = 0;
    for (const auto& name : names) {
      std::vector<double> evals;
      auto c = curve(*strategy(name), sp, geometry, budget, seeds, evals);
      double mean_evals = 0;
      for (double e : evals) mean_evals += e / static_cast<double>(evals.size());
      if (name == "random") random_evals = mean_evals;
      auto at = [&](double share) {
        const auto k = std::max<std::size_t>(1, static_cast<std::size_t>(share * static_cast<double>(sp.configs.size())));
        return c[std::min(k, c.size()) - 1];
      };
      fmt::print("  {:<15} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f}  {:>14.1f} {:>9.0f}%\n", name, at(0.02), at(0.05),
                 at(0.10), at(0.25), at(0.50), mean_evals, 100 * mean_evals / random_evals);
      lines.emplace_back(name, std::move(c));
    }
    svg += cotune_bench::svg_panel(fmt::format("{} ({} configs)", sp.name, sp.configs.size()), lines, 60, y, 560, 200,
                                       {0.8, 0.9, 0.98, 1.0}); // fractions from 0.8 to 1
    y += 250;
  }
  fmt::print("\ncolumns: mean fraction of the optimum reached after that share of the space was evaluated;\n"
             "evals to 2%: mean evaluations until the best measured config is within 2% of the optimum\n"
             "(the budget, half the space, when never); vs random: that count against random sampling's.\n");
  std::ofstream f(plot);
  f << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="660" height="{}" font-family="sans-serif">)", y) << "\n"
    << R"(<text x="60" y="16" font-size="14">best-so-far (fraction of the optimum) against evaluations</text>)" << "\n"
    << svg << "\n</svg>\n";
  fmt::print("plot: {}\n", plot);
  return f ? 0 : 1;
}
