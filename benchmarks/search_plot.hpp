#pragma once
// One panel of a search benchmark's plot: best-so-far (a fraction of the optimum) against evaluations,
// one line per strategy, as SVG. Shared by bench_search_strategies (cost models) and
// bench_cuda_search_spaces (spaces measured on a GPU).
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace cotune_bench {

/// The panel at (x0, y0), w x h: the y axis shows fractions from `ticks.front()` (the lowest) to 1,
/// labelled at each tick.
inline std::string svg_panel(const std::string& title, const std::vector<std::pair<std::string, std::vector<double>>>& lines,
                             double x0, double y0, double w, double h, const std::vector<double>& ticks) {
  static const char* colours[] = {"#444444", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"};
  std::string out = fmt::format(R"(<g><text x="{}" y="{}" font-size="13">{}</text>)", x0, y0 - 8, title);
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", x0, y0, w, h);
  const double lo = ticks.front();
  for (double f : ticks)
    out += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="end">{:.2f}</text>)", x0 - 4,
                       y0 + h - (f - lo) / (1 - lo) * h + 3, f);
  for (std::size_t l = 0; l < lines.size(); ++l) {
    const auto& ys = lines[l].second;
    std::string pts;
    for (std::size_t k = 0; k < ys.size(); ++k) {
      const double y = std::clamp((ys[k] - lo) / (1 - lo), 0.0, 1.0);
      pts += fmt::format("{:.1f},{:.1f} ", x0 + w * static_cast<double>(k + 1) / static_cast<double>(ys.size()), y0 + h - y * h);
    }
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)", colours[l % 6], pts);
    out += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)", x0 + w - 90, y0 + h - 14 * (l + 1),
                       colours[l % 6], lines[l].first);
  }
  out += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="middle">evaluations (up to {})</text></g>)",
                     x0 + w / 2, y0 + h + 14, lines.empty() ? 0 : lines[0].second.size());
  return out;
}

} // namespace cotune_bench
