// Search strategies against random sampling on replayed tuning spaces (issues 12 and 35).
//
//     bench_search_strategies [plot.svg] [seeds] [strategy,strategy,...]
//
// Each space is a ground-truth table (every config's time); each strategy searches it with seeded 1%
// measurement noise, `seeds` seeds (default 100), at a budget of 10% and of 25% of the space (the
// budget each strategy is told: startups and schedules scale with it). Printed per space and
// strategy: the mean regret (true time of the best measured config over the optimum, minus 1), the
// share of seeds within 2% of the optimum, and the worst seed's regret, each at 10% and 25%. A
// strategy worse than random on a space (mean regret at 10% or 25%) is marked with '!'. The SVG
// plots best-so-far against evaluations at the 25% budget.
//
// The spaces are cost models shaped like real kernels: a GEMM, a stencil (a string tiling choice), a
// reduction (a boolean), a kernel with a 4-valued numeric algorithm selector declared categorical
// whose values are unrelated algorithms (issue 35's failure: walked as an ordered axis, a slow method
// walls off the best one), one with two near-optimal regions far apart, and one with boolean and string
// switches that interact. They run on any CPU in seconds; a ground truth measured on a GPU plugs in
// as another `space` (a config list, a time per config and the declared kinds).

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
  param_kinds kinds{};       ///< declared kinds (numbers that are choices)
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


/// Issue 35's shape: METHOD selects one of four unrelated algorithms (a number, declared categorical),
/// each with its own best tile shape. Method 0 is the fastest but only near its own optimum; method 3
/// is nearly as fast over a broad region; methods 1 and 2, between them by number, are slow.
space selector() {
  space s{"selector (4 unrelated methods x block, warps, unroll, vector)", {}, {}, {{"METHOD", param_kind::categorical}}};
  struct method {
    double base, curve, b, w, u, v;
  };
  const method methods[] = {{1.00, 0.04, 5, 1, 3, 2}, {1.70, 0.05, 7, 3, 0, 0}, {1.45, 0.05, 6, 2, 1, 1}, {1.07, 0.03, 8, 3, 1, 0}};
  for (int m : {0, 1, 2, 3})
    for (int block : {16, 32, 64, 128, 256})
      for (int warps : {1, 2, 4, 8})
        for (int unroll : {1, 2, 4, 8})
          for (int vec : {1, 2, 4}) {
            config c{{"METHOD", m}, {"BLOCK", block}, {"WARPS", warps}, {"UNROLL", unroll}, {"VEC", vec}};
            const double b = lg(c, "BLOCK"), w = lg(c, "WARPS"), u = lg(c, "UNROLL"), v = lg(c, "VEC");
            const method& k = methods[m];
            const double t = k.base * (1 + k.curve * ((b - k.b) * (b - k.b) + (w - k.w) * (w - k.w) + (u - k.u) * (u - k.u) +
                                                      (v - k.v) * (v - k.v)) +
                                       0.01 * std::sin(2 * b + 3 * u + v + m));
            s.configs.push_back(c);
            // Methods 0 and 2 stage BLOCK x UNROLL x VEC elements in shared memory.
            s.truth.push_back((m == 0 || m == 2) && b + u + v > 10 ? INFINITY : t);
          }
  return s;
}

/// Two near-optimal regions at opposite corners (within 0.5% of each other), a rugged surface between.
space two_regions() {
  space s{"two regions (6 x 6 x 5 x 4 x 4 tiles, optima at opposite corners)", {}, {}};
  for (int a : {1, 2, 4, 8, 16, 32})
    for (int b : {1, 2, 4, 8, 16, 32})
      for (int c : {1, 2, 4, 8, 16})
        for (int d : {1, 2, 4, 8})
          for (int e : {1, 2, 4, 8}) {
            config cf{{"A", a}, {"B", b}, {"C", c}, {"D", d}, {"E", e}};
            const double x[] = {lg(cf, "A"), lg(cf, "B"), lg(cf, "C"), lg(cf, "D"), lg(cf, "E")};
            const double lo[] = {1, 0, 1, 0, 1}, hi[] = {5, 4, 4, 3, 2};
            double d1 = 0, d2 = 0;
            for (int k = 0; k < 5; ++k) {
              d1 += (x[k] - lo[k]) * (x[k] - lo[k]);
              d2 += (x[k] - hi[k]) * (x[k] - hi[k]);
            }
            const double t = std::min(1.0 + 0.06 * d1, 1.005 + 0.04 * d2) + 0.015 * std::sin(x[0] * 3 + x[1] * 2 + x[2] * 5 + x[3] + x[4] * 4);
            s.configs.push_back(cf);
            s.truth.push_back(t);
          }
  return s;
}

/// Boolean and string switches whose effects depend on each other and on the tiles.
space switches() {
  space s{"switches (tiles, split, 3 booleans, a string layout)", {}, {}};
  for (int tm : {16, 32, 64, 128})
    for (int tn : {16, 32, 64, 128})
      for (int split : {1, 2, 4, 8})
        for (bool shared : {false, true})
          for (bool prefetch : {false, true})
            for (bool swizzle : {false, true})
              for (const char* layout : {"row", "col", "blocked"}) {
                config c{{"TM", tm}, {"TN", tn}, {"SPLIT", split}, {"SHARED", shared}, {"PREFETCH", prefetch},
                         {"SWIZZLE", swizzle}, {"LAYOUT", layout}};
                const double m = lg(c, "TM"), n = lg(c, "TN"), k = lg(c, "SPLIT");
                const std::string l = layout;
                double t = 1.0 + 0.05 * (m - 5) * (m - 5) + 0.05 * (n - 6) * (n - 6) + 0.06 * (k - 1) * (k - 1);
                t *= shared ? (tm * tn >= 64 * 64 ? 0.82 : 1.05) : 1.0;
                t *= prefetch ? (shared ? 0.9 : 1.12) : 1.0;
                t *= swizzle ? (l == "blocked" ? 0.94 : 1.03) : 1.0;
                t *= l == "row" ? 1.0 : l == "col" ? 1.15 : 1.02;
                t *= 1 + 0.01 * std::sin(m * 2 + n * 3 + k);
                s.configs.push_back(c);
                s.truth.push_back(shared && prefetch && tm * tn * (l == "blocked" ? 2 : 1) > 64 * 128 ? INFINITY : t);
              }
  return s;
}

struct seed_result {
  double regret;                 ///< at the end of the budget
  std::vector<double> best_so_far; ///< optimum / true time of the best measured, per evaluation
};

/// One seeded search of `sp` with a budget of `budget` evaluations.
seed_result run_once(const search_strategy& st, const space& sp, const search_space& geometry, std::size_t budget,
                     int seed) {
  const double opt = *std::min_element(sp.truth.begin(), sp.truth.end());
  std::mt19937_64 noise(static_cast<std::uint64_t>(seed) * 7919);
  auto evaluate = [&](std::size_t i) -> search_outcome {
    if (!std::isfinite(sp.truth[i])) return {i, std::numeric_limits<double>::infinity(), false};
    const double u = static_cast<double>(noise() >> 11) * 0x1.0p-53 - 0.5;
    return {i, sp.truth[i] * (1 + 0.0346 * u), true}; // 1% standard deviation
  };
  const auto h = run_search(st, geometry, {.evaluations = budget, .seed = static_cast<std::uint64_t>(seed)}, evaluate, 8, 2);
  seed_result r{INFINITY, std::vector<double>(budget, 0.0)};
  double best_measured = INFINITY, best_true = INFINITY;
  for (std::size_t k = 0; k < budget; ++k) {
    if (k < h.size() && h[k].valid() && h[k].time_ms < best_measured) {
      best_measured = h[k].time_ms;
      best_true = sp.truth[h[k].index];
    }
    r.best_so_far[k] = std::isfinite(best_true) ? opt / best_true : 0.0;
  }
  r.regret = best_true / opt - 1;
  return r;
}

struct summary {
  double mean = 0, within = 0, worst = 0; ///< mean regret, share of seeds within 2%, worst regret
  std::vector<double> curve;              ///< mean best-so-far per evaluation
};

summary measure(const search_strategy& st, const space& sp, const search_space& geometry, double share, int seeds) {
  const auto budget = static_cast<std::size_t>(std::ceil(share * static_cast<double>(sp.configs.size())));
  summary out;
  out.curve.assign(budget, 0.0);
  for (int seed = 1; seed <= seeds; ++seed) {
    const auto r = run_once(st, sp, geometry, budget, seed);
    out.mean += r.regret / seeds;
    out.within += (r.regret <= 0.02 ? 1.0 : 0.0) / seeds;
    out.worst = std::max(out.worst, r.regret);
    for (std::size_t k = 0; k < budget; ++k) out.curve[k] += r.best_so_far[k] / seeds;
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  const std::string plot = argc > 1 ? argv[1] : "search_strategies.svg";
  const int seeds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 100;
  std::vector<std::string> names{"random", "local", "local-pipelined", "evolution", "bayes", "bayes-local"};
  if (argc > 3) {
    names.clear();
    std::string list = argv[3];
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      names.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  // local-pipelined: local search proposing while a batch is in flight (not a COTUNE_SEARCH name).
  auto strategy = [](const std::string& name) -> std::shared_ptr<const search_strategy> {
    if (name == "local-pipelined") return std::make_shared<local_search>(4, 3, true);
    // bayes-local:STARTUP:GAMMA:EXPLORE:LOCAL_SHARE, the default strategy with other constants.
    if (name.starts_with("bayes-local:")) {
      double p[4] = {10, 0.2, 0.05, 0.7};
      std::sscanf(name.c_str(), "bayes-local:%lf:%lf:%lf:%lf", &p[0], &p[1], &p[2], &p[3]);
      return std::make_shared<bayes_local_search>(static_cast<std::size_t>(p[0]), p[1], p[2], p[3]);
    }
    if (auto s = search_named(name)) return s;
    std::fprintf(stderr, "unknown strategy %s\n", name.c_str());
    std::exit(2);
  };
  const std::vector<space> spaces{gemm(), stencil(), reduction(), selector(), two_regions(), switches()};
  std::string svg;
  double y = 48; // below the plot's title (y 16) and the first panel's own (y - 8)
  fmt::print("{} seeds per strategy and budget, 1% measurement noise; regret = true time of the best measured "
             "config / optimum - 1\n", seeds);
  for (const auto& sp : spaces) {
    const search_space geometry(sp.configs, sp.kinds);
    std::string kinds;
    for (const auto& a : geometry.axes())
      if (a.categorical()) kinds += (kinds.empty() ? "" : ", ") + a.name;
    fmt::print("\n{}: {} configs, {} fail; categorical: {}\n", sp.name, sp.configs.size(),
               std::count_if(sp.truth.begin(), sp.truth.end(), [](double t) { return !std::isfinite(t); }),
               kinds.empty() ? "none" : kinds);
    fmt::print("  {:<16} {:>11} {:>9} {:>9}   {:>11} {:>9} {:>9}\n", "strategy", "regret@10%", "<=2%", "worst",
               "regret@25%", "<=2%", "worst");
    std::vector<std::pair<std::string, std::vector<double>>> lines;
    double random10 = -1, random25 = -1;
    for (const auto& name : names) {
      const auto st = strategy(name);
      const summary a = measure(*st, sp, geometry, 0.10, seeds), b = measure(*st, sp, geometry, 0.25, seeds);
      if (name == "random") {
        random10 = a.mean;
        random25 = b.mean;
      }
      const bool worse = random10 >= 0 && (a.mean > random10 * 1.0001 + 1e-9 || b.mean > random25 * 1.0001 + 1e-9);
      fmt::print("  {:<16} {:>10.2f}% {:>8.0f}% {:>8.2f}%   {:>10.2f}% {:>8.0f}% {:>8.2f}%{}\n", name, 100 * a.mean,
                 100 * a.within, 100 * a.worst, 100 * b.mean, 100 * b.within, 100 * b.worst, worse ? "  !" : "");
      lines.emplace_back(name, b.curve);
    }
    svg += cotune_bench::svg_panel(fmt::format("{} ({} configs)", sp.name, sp.configs.size()), lines, 60, y, 560, 200,
                                   {0.8, 0.9, 0.98, 1.0}); // fractions from 0.8 to 1
    y += 250;
  }
  fmt::print("\nregret@10%, @25%: mean over seeds with a budget of that share of the space; <=2%: seeds ending within\n"
             "2% of the optimum; worst: the worst seed's regret; !: mean regret above random's at either budget.\n");
  std::ofstream f(plot);
  f << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="660" height="{}" font-family="sans-serif">)", y) << "\n"
    << R"(<text x="60" y="16" font-size="14">best-so-far (fraction of the optimum) against evaluations, 25% budget</text>)" << "\n"
    << svg << "\n</svg>\n";
  fmt::print("plot: {}\n", plot);
  return f ? 0 : 1;
}
