// The search suite (issue 35, item 3): every search strategy replayed on stored ground truths of real
// tuning spaces, other people's kernels and GPUs and our own H200's (benchmarks/search_suite/data; the
// sources and licences are in benchmarks/search_suite/README.md).
//
//     bench_search_suite [--data DIR] [--out DIR] [--seeds N] [--large-seeds N] [--large SIZE]
//                        [--strategies a,b,...] [--spaces a,b,...] [--batch N] [--depth N]
//                        [--with OTHER_RESULTS.json ...] [--from RESULTS.json ...]
//     bench_search_suite --transfer [--data DIR] [--out DIR] [--seeds N] [--strategies a,b] [--budget SHARE]
//
// --transfer (issue 37, item 3) replays transfer between tuned keys on the multi-size spaces (data files
// with a "multi_size" object; search_suite/transfer_replay.hpp): each size in turn is the new key, the
// other sizes of its group are tuned, and the new key's search is seeded with their winners (the up to 4
// nearest keys', as a tuner does). Per strategy (default bayes-local, the default with a budget, and
// random) and size, over `seeds` seeds: the evaluations until a config within 2% of the new key's
// optimum is evaluated, without and with the seeds (mean and median), and an exhaustive tuning's (the
// seeds measured first). The budget is SHARE of the space (default 1: the whole space, so that every
// search gets there); a search that does not get there within a smaller one counts its budget and is
// reported as a miss. Writes OUT/transfer.json.
//
// For each space, strategy (every registered name but exhaustive, by default) and budget (5%, 10%, 25%
// and 50% of the space's configs, invalid ones included: a failed config costs an evaluation, as it
// costs a compile in a tuning), `seeds` seeded searches (default 100; `--large-seeds` for spaces of at
// least `--large` configs, default the same: a strategy that scans the space per proposal costs O(size^2)
// per search, minutes per seed on the 18,000-config space on a shared 2-core VM) are replayed against the stored
// times, without added noise: the time a strategy is told is the stored one. Per budget: the mean regret
// (true time of the best config found / the optimum - 1; a search that found no valid config counts the
// slowest valid time) and the share of seeds within 2% of the optimum. Batches of `batch` proposals with
// `depth` batches in flight, as a tuning with that many compile threads runs them (default 8 and 2, as
// bench_search_strategies).
//
// A strategy whose proposals do not depend on its budget is searched once per seed at the largest budget
// and read at the smaller ones (its first k proposals are the same); the program checks this per strategy
// and space with seed 1 at every budget, and searches each budget separately where they differ.
//
// Writes OUT/results.json (every figure) and OUT/NAME.svg per space (mean regret against budget, one line
// per strategy; lines of --with files, e.g. Kernel Tuner's from benchmarks/search_suite/kt_replay.py,
// dashed), and prints a table per space and the worst case over spaces per strategy against the issue's
// targets (at 10%: mean regret <= 1% and within 2% in >= 90% of seeds; at 25%: mean regret <= 0.2%).
// --from takes cotune's figures from an earlier results.json instead of replaying (to redraw the plots
// and tables with other tools' lines added). scripts/search-suite runs it with an optimised build.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/core/json_writer.hpp>
#include <cotune/search/search.hpp>

#include "search_suite/suite_data.hpp"
#include "search_suite/transfer_replay.hpp"

#if __has_include(<cotune/core/param_kind.hpp>)
#include <cotune/core/param_kind.hpp>
#include <cotune/search/search_registry.hpp>
#define COTUNE_SUITE_HAS_KINDS 1
#else
#define COTUNE_SUITE_HAS_KINDS 0
#endif

#ifndef COTUNE_SEARCH_SUITE_DATA
#define COTUNE_SEARCH_SUITE_DATA "benchmarks/search_suite/data"
#endif

namespace {

using cotune_bench::suite_space;

/// The geometry a strategy walks, with the dataset's parameter kinds declared where the library has
/// kinds (the one place that knows whether it does).
cotune::search_space geometry_of(const suite_space& s) {
#if COTUNE_SUITE_HAS_KINDS
  cotune::param_kinds kinds;
  for (const auto& p : s.params) kinds[p.name] = p.categorical ? cotune::param_kind::categorical : cotune::param_kind::ordered;
  return cotune::search_space(s.configs, kinds);
#else
  return cotune::search_space(s.configs);
#endif
}

std::vector<std::string> default_strategies() {
#if COTUNE_SUITE_HAS_KINDS
  std::vector<std::string> names;
  for (const auto& n : cotune::search_registry::instance().names())
    if (n != "exhaustive") names.push_back(n);
  return names;
#else
  return {"random", "local", "evolution", "bayes"};
#endif
}

constexpr double budget_shares[] = {0.05, 0.10, 0.25, 0.50};
constexpr std::size_t n_budgets = std::size(budget_shares);

struct point {
  double share = 0;
  std::size_t evaluations = 0;
  double mean_regret = 0;  ///< a fraction (0.01: 1%)
  double within_2pct = 0;  ///< share of seeds
};

struct line {
  std::string strategy, tool = "cotune";
  std::vector<point> points;
  bool prefix = false; ///< searched once per seed at the largest budget and read at the smaller ones
  double seconds = 0;
  int seeds = 0;
};

std::size_t evaluations_at(double share, std::size_t size) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(share * static_cast<double>(size))));
}

struct replay {
  const suite_space& s;
  const cotune::search_space& geometry;
  std::size_t batch, depth;

  /// Proposal order of one search (indices), the budget `evals`.
  [[nodiscard]] std::vector<std::size_t> run(const cotune::search_strategy& st, std::size_t evals, std::uint64_t seed) const {
    auto evaluate = [&](std::size_t i) {
      const double t = s.truth[i];
      return std::isfinite(t) ? cotune::search_outcome{i, t, true}
                              : cotune::search_outcome{i, std::numeric_limits<double>::infinity(), false};
    };
    const auto h = cotune::run_search(st, geometry, {.evaluations = evals, .seed = seed}, evaluate, batch, depth);
    std::vector<std::size_t> order;
    order.reserve(h.size());
    for (const auto& o : h) order.push_back(o.index);
    return order;
  }

  /// Regret of the best of the first `k` proposals.
  [[nodiscard]] double regret(const std::vector<std::size_t>& order, std::size_t k) const {
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < std::min(k, order.size()); ++j) best = std::min(best, s.truth[order[j]]);
    if (!std::isfinite(best)) best = s.slowest_valid();
    return best / s.optimum() - 1;
  }
};

line measure(const replay& r, const std::string& name, int seeds) {
  const auto st = cotune::search_named(name);
  if (!st) throw std::runtime_error(fmt::format("no search strategy named \"{}\"", name));
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t size = r.s.configs.size();
  std::size_t evals[n_budgets];
  for (std::size_t b = 0; b < n_budgets; ++b) evals[b] = evaluations_at(budget_shares[b], size);

  // Whether the first k proposals at the largest budget are those of a search with budget k (seed 1);
  // the four searches at once, so that a large space's check is not one long serial stretch.
  std::vector<std::vector<std::size_t>> first(n_budgets);
  {
    std::vector<std::thread> check;
    for (std::size_t b = 0; b < n_budgets; ++b) check.emplace_back([&, b] { first[b] = r.run(*st, evals[b], 1); });
    for (auto& t : check) t.join();
  }
  const auto& full = first[n_budgets - 1];
  bool prefix = true;
  for (std::size_t b = 0; b + 1 < n_budgets; ++b)
    prefix = prefix && first[b].size() <= full.size() && std::equal(first[b].begin(), first[b].end(), full.begin());

  // regrets[seed][budget], filled by as many threads as the machine has.
  std::vector<std::array<double, n_budgets>> regrets(static_cast<std::size_t>(seeds));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int k; (k = next++) < seeds;) {
      const auto seed = static_cast<std::uint64_t>(k + 1);
      auto& out = regrets[static_cast<std::size_t>(k)];
      if (seed == 1) {
        for (std::size_t b = 0; b < n_budgets; ++b) out[b] = r.regret(prefix ? full : first[b], evals[b]);
      } else if (prefix) {
        const auto order = r.run(*st, evals[n_budgets - 1], seed);
        for (std::size_t b = 0; b < n_budgets; ++b) out[b] = r.regret(order, evals[b]);
      } else {
        for (std::size_t b = 0; b < n_budgets; ++b) out[b] = r.regret(r.run(*st, evals[b], seed), evals[b]);
      }
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();

  line l{name, "cotune", {}, prefix, 0, seeds};
  for (std::size_t b = 0; b < n_budgets; ++b) {
    point p{budget_shares[b], evals[b], 0, 0};
    for (const auto& s : regrets) {
      p.mean_regret += s[b] / seeds;
      p.within_2pct += (s[b] <= 0.02 + 1e-12 ? 1.0 : 0.0) / seeds;
    }
    l.points.push_back(p);
  }
  l.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return l;
}

// ------------------------------------------------------------------------------------------------
// Other tools' figures (--with): the same schema as results.json, lines taken by space name.

std::map<std::string, std::vector<line>> read_other(const std::string& file) {
  using namespace simdjson;
  dom::parser parser;
  dom::element doc;
  if (parser.load(file).get(doc)) throw std::runtime_error(fmt::format("{}: not readable JSON", file));
  std::map<std::string, std::vector<line>> out;
  dom::array spaces;
  if (doc["spaces"].get(spaces)) throw std::runtime_error(fmt::format("{}: no \"spaces\" array", file));
  for (dom::element sp : spaces) {
    std::string_view name;
    dom::array lines;
    if (sp["name"].get(name) || sp["strategies"].get(lines)) throw std::runtime_error(fmt::format("{}: a space lacks name or strategies", file));
    for (dom::element le : lines) {
      line l;
      std::string_view sname, tool;
      dom::array pts;
      if (le["name"].get(sname) || le["tool"].get(tool) || le["points"].get(pts))
        throw std::runtime_error(fmt::format("{}: space {}: a strategy lacks name, tool or points", file, name));
      l.strategy = std::string(sname);
      l.tool = std::string(tool);
      std::int64_t seeds = 0;
      if (le["seeds"].get(seeds) == SUCCESS) l.seeds = static_cast<int>(seeds);
      bool prefix = false;
      if (le["prefix"].get(prefix) == SUCCESS) l.prefix = prefix;
      double seconds = 0;
      if (le["seconds"].get(seconds) == SUCCESS) l.seconds = seconds;
      for (dom::element pe : pts) {
        point p;
        std::uint64_t e = 0;
        if (pe["share"].get(p.share) || pe["evaluations"].get(e) || pe["mean_regret"].get(p.mean_regret) ||
            pe["within_2pct"].get(p.within_2pct))
          throw std::runtime_error(fmt::format("{}: space {}, {}: a point lacks share/evaluations/mean_regret/within_2pct",
                                               file, name, l.strategy));
        p.evaluations = static_cast<std::size_t>(e);
        l.points.push_back(p);
      }
      out[std::string(name)].push_back(std::move(l));
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Output.

std::string label(const line& l) { return l.tool == "cotune" ? l.strategy : l.tool + ":" + l.strategy; }

/// Mean regret (log scale, 0.01% to 100%; below 0.01% is drawn at the floor) against budget share (log
/// scale, 5% to 50%), one line per strategy, other tools' dashed.
std::string svg_plot(const suite_space& s, const std::vector<line>& lines) {
  static const char* colours[] = {"#444444", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  const double x0 = 70, y0 = 40, w = 520, h = 300;
  auto xpos = [&](double share) { return x0 + w * std::log(share / 0.05) / std::log(10.0); };
  auto ypos = [&](double regret) {
    const double pct = std::clamp(regret * 100, 0.01, 100.0);
    return y0 + h - h * (std::log10(pct) + 2) / 4;
  };
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">)"
      "\n"
      R"(<text x="{}" y="18" font-size="13">{} ({} configs, {} valid): mean regret against budget</text>)"
      "\n"
      R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)"
      "\n",
      x0 + w + 200, y0 + h + 50, x0, s.name, s.configs.size(), s.valid(), x0, y0, w, h);
  for (double pct : {0.01, 0.1, 1.0, 10.0, 100.0}) {
    const double y = ypos(pct / 100);
    out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#eee"/>)", x0, y, x0 + w, y);
    out += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}{}%</text>)"
                       "\n",
                       x0 - 4, y + 3, pct == 0.01 ? "&lt;=" : "", pct);
  }
  for (double share : budget_shares)
    out += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{:.0f}%</text>)"
                       "\n",
                       xpos(share), y0 + h + 14, share * 100);
  out += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="middle">budget (share of the space evaluated)</text>)"
                     "\n",
                     x0 + w / 2, y0 + h + 32);
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& l = lines[k];
    const char* colour = colours[k % std::size(colours)];
    std::string pts;
    for (const auto& p : l.points) pts += fmt::format("{:.1f},{:.1f} ", xpos(p.share), ypos(p.mean_regret));
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.8"{} points="{}"/>)", colour,
                       l.tool == "cotune" ? "" : R"( stroke-dasharray="6,3")", pts);
    for (const auto& p : l.points)
      out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"/>)", xpos(p.share), ypos(p.mean_regret), colour);
    out += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)"
                       "\n",
                       x0 + w + 12, y0 + 12 + 16 * static_cast<double>(k), colour, label(l));
  }
  return out + "</svg>\n";
}

std::string json_escape(const std::string& t) {
  std::string o;
  for (char c : t) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::string results_json(const std::vector<suite_space>& spaces, const std::vector<std::vector<line>>& lines,
                         std::size_t batch, std::size_t depth) {
  std::string o = fmt::format(R"({{"format": "cotune-search-suite-results-1", "batch": {}, "depth": {}, "spaces": [)", batch, depth);
  for (std::size_t i = 0; i < lines.size(); ++i) { // the spaces done so far
    const auto& s = spaces[i];
    o += fmt::format(R"({}{{"name": "{}", "size": {}, "valid": {}, "optimum": {}, "strategies": [)", i ? ", " : "\n ",
                     json_escape(s.name), s.configs.size(), s.valid(), s.optimum());
    bool first = true;
    for (const auto& l : lines[i]) {
      if (l.tool != "cotune") continue;
      o += fmt::format(R"({}{{"name": "{}", "tool": "cotune", "prefix": {}, "seconds": {:.2f}, "seeds": {}, "points": [)",
                       first ? "\n  " : ",\n  ", json_escape(l.strategy), l.prefix, l.seconds, l.seeds);
      first = false;
      for (std::size_t k = 0; k < l.points.size(); ++k) {
        const auto& p = l.points[k];
        o += fmt::format(R"({}{{"share": {}, "evaluations": {}, "mean_regret": {:.6g}, "within_2pct": {:.4g}}})", k ? ", " : "",
                         p.share, p.evaluations, p.mean_regret, p.within_2pct);
      }
      o += "]}";
    }
    o += "]}";
  }
  return o + "\n]}\n";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Transfer between sizes (--transfer).

struct transfer_figure {
  double mean = 0, median = 0;
  std::size_t misses = 0; ///< searches that did not get within 2% in their budget (counted at the budget)
};

transfer_figure summarise(std::vector<double> evals, std::size_t misses) {
  std::sort(evals.begin(), evals.end());
  transfer_figure f{0, 0, misses};
  for (double e : evals) f.mean += e / static_cast<double>(evals.size());
  const std::size_t m = evals.size() / 2;
  f.median = evals.size() % 2 ? evals[m] : (evals[m - 1] + evals[m]) / 2;
  return f;
}

int run_transfer(const std::vector<suite_space>& spaces, const std::vector<std::string>& names, int seeds,
                 double budget_share, std::size_t batch, std::size_t depth, const std::string& out) {
  const auto groups = cotune_bench::size_groups(spaces);
  if (groups.empty()) throw std::runtime_error("no multi-size spaces (data files with a \"multi_size\" object of 2 or "
                                               "more sizes in one group): nothing to transfer between");
  cotune::json_writer w;
  w.begin_object().field("format", "cotune-search-suite-transfer-1").field("seeds", seeds).field("budget_share", budget_share);
  w.field("batch", batch).field("depth", depth).key("groups").begin_array();
  std::map<std::string, std::vector<double>> ratios; // per strategy: with / without, mean evaluations, per size
  for (const auto& [group, sizes] : groups) {
    fmt::print("\n{}: {} sizes; each the new key, the others tuned; {} seeds, budget {:.0f}% of the space; "
               "evaluations to within 2% of the new key's optimum\n",
               group, sizes.size(), seeds, 100 * budget_share);
    fmt::print("| new key | configs (in 2%) | transfer seeds in 2% | strategy | without: mean / median (misses) | "
               "with: mean / median (misses) | with / without (means) |\n|---|---:|---:|---|---:|---:|---:|\n");
    w.begin_object().field("group", group).key("sizes").begin_array();
    for (const auto* target : sizes) {
      const auto geometry = geometry_of(*target);
      const auto seeds_of = cotune_bench::transfer_seeds(*target, sizes);
      const double bound = target->optimum() * 1.02 * (1 + 1e-12);
      const auto good = static_cast<std::size_t>(
          std::count_if(target->truth.begin(), target->truth.end(), [&](double t) { return t <= bound; }));
      const auto good_seeds = static_cast<std::size_t>(
          std::count_if(seeds_of.begin(), seeds_of.end(), [&](std::size_t i) { return target->truth[i] <= bound; }));
      const std::size_t budget = evaluations_at(budget_share, target->configs.size());
      w.begin_object().field("key", target->size_key).field("space", target->name).field("configs", target->configs.size());
      w.field("within_2pct", good).field("budget", budget).key("seeds").begin_array();
      for (auto i : seeds_of) w.raw(target->configs[i].json());
      w.end_array().field("seeds_within_2pct", good_seeds).key("strategies").begin_array();
      const auto row = [&](const std::string& name, const transfer_figure& a, const transfer_figure& b) {
        fmt::print("| {} | {} ({}) | {} of {} | {} | {:.1f} / {:.0f} ({}) | {:.1f} / {:.0f} ({}) | {:.2f} |\n",
                   target->size_key, target->configs.size(), good, good_seeds, seeds_of.size(), name, a.mean, a.median,
                   a.misses, b.mean, b.median, b.misses, b.mean / a.mean);
        w.begin_object().field("name", name);
        w.key("without").begin_object().field("mean", a.mean).field("median", a.median).field("misses", a.misses).end_object();
        w.key("with").begin_object().field("mean", b.mean).field("median", b.median).field("misses", b.misses).end_object();
        w.end_object();
        ratios[name].push_back(b.mean / a.mean);
      };
      for (const auto& name : names) {
        const auto st = cotune::search_named(name);
        if (!st) throw std::runtime_error(fmt::format("no search strategy named \"{}\"", name));
        // per seed: evaluations without and with the transfer seeds (0: a miss)
        std::vector<std::array<std::size_t, 2>> evals(static_cast<std::size_t>(seeds));
        std::atomic<int> next{0};
        auto work = [&] {
          for (int k; (k = next++) < seeds;) {
            const cotune::search_settings settings{.evaluations = budget, .seed = static_cast<std::uint64_t>(k + 1)};
            for (int with = 0; with < 2; ++with)
              evals[static_cast<std::size_t>(k)][static_cast<std::size_t>(with)] =
                  cotune_bench::evaluations_to_near(*target, geometry, *st, settings,
                                                    with ? seeds_of : std::vector<std::size_t>{}, batch, depth)
                      .value_or(0);
          }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) pool.emplace_back(work);
        for (auto& t : pool) t.join();
        transfer_figure f[2];
        for (std::size_t with = 0; with < 2; ++with) {
          std::vector<double> v;
          std::size_t misses = 0;
          for (const auto& e : evals) {
            misses += e[with] == 0 ? 1 : 0;
            v.push_back(static_cast<double>(e[with] == 0 ? budget : e[with]));
          }
          f[with] = summarise(std::move(v), misses);
        }
        row(name, f[0], f[1]);
      }
      const auto plain = static_cast<double>(cotune_bench::exhaustive_evaluations_to_near(*target, {}));
      const auto seeded = static_cast<double>(cotune_bench::exhaustive_evaluations_to_near(*target, seeds_of));
      row("exhaustive (file order)", {plain, plain, 0}, {seeded, seeded, 0});
      w.end_array().end_object();
      std::fflush(stdout);
    }
    w.end_array().end_object();
  }
  w.end_array().key("ratio_of_means").begin_object();
  fmt::print("\nwith / without transfer, ratio of mean evaluations to within 2%, over every new key (target: at most 0.5)\n");
  for (const auto& [name, rs] : ratios) {
    double mean = 0;
    for (double r : rs) mean += r / static_cast<double>(rs.size());
    const double worst = *std::max_element(rs.begin(), rs.end());
    fmt::print("  {:<24} mean {:.2f}, worst {:.2f} over {} keys: {}\n", name, mean, worst, rs.size(),
               mean <= 0.5 ? "target met (mean)" : "target not met (mean)");
    w.key(name).begin_object().field("mean", mean).field("worst", worst).end_object();
  }
  w.end_object().end_object();
  std::filesystem::create_directories(out);
  const auto file = std::filesystem::path(out) / "transfer.json";
  std::ofstream(file) << std::move(w).take() << "\n";
  fmt::print("figures: {}\n", file.string());
  return 0;
}

int usage() {
  std::fprintf(stderr, "usage: bench_search_suite [--data DIR] [--out DIR] [--seeds N] [--large-seeds N] [--large SIZE] [--strategies a,b] "
                       "[--spaces a,b] [--batch N] [--depth N] [--with RESULTS.json]... [--from RESULTS.json]...\n"
                       "       bench_search_suite --transfer [--data DIR] [--out DIR] [--seeds N] [--strategies a,b] "
                       "[--budget SHARE]\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) try {
  std::string data = COTUNE_SEARCH_SUITE_DATA, out = "search_suite_out";
  int seeds = 100, large_seeds = -1;
  std::size_t batch = 8, depth = 2, large = 10000;
  std::vector<std::string> names = default_strategies(), only, with, from;
  bool transfer = false, named = false;
  double budget_share = 1.0; // --transfer: the whole space, so that every search gets within 2%
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--transfer") {
      transfer = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--data") data = v;
    else if (a == "--out") out = v;
    else if (a == "--seeds") seeds = std::max(1, std::atoi(v.c_str()));
    else if (a == "--large-seeds") large_seeds = std::max(1, std::atoi(v.c_str()));
    else if (a == "--large") large = static_cast<std::size_t>(std::max(1, std::atoi(v.c_str())));
    else if (a == "--strategies") names = split(v), named = true;
    else if (a == "--budget") {
      budget_share = std::atof(v.c_str());
      if (!(budget_share > 0 && budget_share <= 1)) return usage();
    }
    else if (a == "--spaces") only = split(v);
    else if (a == "--batch") batch = static_cast<std::size_t>(std::max(1, std::atoi(v.c_str())));
    else if (a == "--depth") depth = static_cast<std::size_t>(std::max(1, std::atoi(v.c_str())));
    else if (a == "--with") with.push_back(v);
    else if (a == "--from") from.push_back(v);
    else return usage();
  }
  std::map<std::string, std::vector<line>> other, stored;
  for (const auto& f : from)
    for (auto& [space, ls] : read_other(f))
      for (auto& l : ls) stored[space].push_back(std::move(l));
  for (const auto& f : with)
    for (auto& [space, ls] : read_other(f))
      for (auto& l : ls) other[space].push_back(std::move(l));

  std::vector<suite_space> spaces;
  for (const auto& f : cotune_bench::suite_files(data)) {
    auto s = cotune_bench::load_suite_space(f);
    if (only.empty() || std::find(only.begin(), only.end(), s.name) != only.end()) spaces.push_back(std::move(s));
  }
  if (spaces.empty()) throw std::runtime_error(fmt::format("no space found under {} (or none of --spaces)", data));
  if (transfer)
    return run_transfer(spaces, named ? names : std::vector<std::string>{"bayes-local", "random"}, seeds, budget_share,
                        batch, depth, out);
  std::filesystem::create_directories(out);
  fmt::print("search suite: {} spaces from {}; strategies {}; {} seeds ({} from {} configs); batches of {}, {} in flight; no added noise{}\n",
             spaces.size(), data, fmt::join(names, ", "), seeds, large_seeds > 0 ? large_seeds : seeds, large, batch, depth,
             COTUNE_SUITE_HAS_KINDS ? "; parameter kinds declared" : "; this library has no parameter kinds: all ordered");

  std::vector<std::vector<line>> all;
  for (const auto& s : spaces) {
    const bool replayed = !stored.count(s.name);
    const auto geometry = replayed ? geometry_of(s) : cotune::search_space(std::vector<cotune::config>{});
    const replay r{s, geometry, batch, depth};
    const int n_seeds = large_seeds > 0 && s.configs.size() >= large ? large_seeds : seeds;
    fmt::print("\n{}: {} configs ({} valid), {} parameters ({} categorical), optimum {:.6g} ms; {} near-optimal "
               "region(s), {:.2f} apart; {}; {}\n",
               s.name, s.configs.size(), s.valid(), s.params.size(), s.categorical_params(), s.optimum(),
               s.near_optimal_regions, s.near_optimal_distance, s.gpu,
               replayed ? fmt::format("{} seeds", n_seeds) : std::string("cotune's figures from --from"));
    fmt::print("  | {:<34} | {:>15} | {:>15} | {:>15} | {:>15} |\n", "strategy (mean regret, in 2%)", "5%", "10%", "25%",
               "50%");
    std::vector<line> lines;
    if (replayed)
      for (const auto& name : names) lines.push_back(measure(r, name, n_seeds));
    else
      lines = stored[s.name]; // figures of an earlier run (--from)
    for (const auto& l : other[s.name]) lines.push_back(l);
    for (const auto& l : lines) {
      std::string row = fmt::format("  | {:<34} |", label(l));
      for (const auto& p : l.points) row += fmt::format(" {:>7.2f}% {:>5.0f}% |", 100 * p.mean_regret, 100 * p.within_2pct);
      if (l.tool == "cotune" && replayed)
        row += fmt::format(" {:.1f} s{}", l.seconds, l.prefix ? "" : ", budgets searched separately");
      fmt::print("{}\n", row);
    }
    std::fflush(stdout);
    std::ofstream(std::filesystem::path(out) / (s.name + ".svg")) << svg_plot(s, lines);
    all.push_back(std::move(lines));
    // after each space, so that a run stopped early keeps the figures of the spaces it finished
    std::ofstream(std::filesystem::path(out) / "results.json") << results_json(spaces, all, batch, depth);
  }

  // The worst case over spaces, per strategy, against the issue's targets.
  fmt::print("\nworst over {} spaces | at 10%: max mean regret, min share in 2% | at 25%: max mean regret | targets met\n",
             spaces.size());
  std::map<std::string, std::array<double, 3>> worst;
  std::map<std::string, std::size_t> seen;
  for (const auto& lines : all)
    for (const auto& l : lines) {
      auto& w = worst.try_emplace(label(l), std::array<double, 3>{0, 1, 0}).first->second;
      ++seen[label(l)];
      for (const auto& p : l.points) {
        if (std::abs(p.share - 0.10) < 1e-9) {
          w[0] = std::max(w[0], p.mean_regret);
          w[1] = std::min(w[1], p.within_2pct);
        }
        if (std::abs(p.share - 0.25) < 1e-9) w[2] = std::max(w[2], p.mean_regret);
      }
    }
  for (const auto& [name, w] : worst)
    fmt::print("  {:<34} {:>7.2f}% {:>5.0f}%   {:>7.2f}%   {}{}\n", name, 100 * w[0], 100 * w[1], 100 * w[2],
               w[0] <= 0.01 && w[1] >= 0.9 && w[2] <= 0.002 ? "yes" : "no",
               seen[name] < spaces.size() ? fmt::format(" (on {} spaces)", seen[name]) : "");
  fmt::print("\nfigures: {}/results.json, plots: {}/<space>.svg\n", out, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_search_suite: %s\n", e.what());
  return 1;
}
