#pragma once
/// \file `cotune::job::html_report`: tuning results as one self-contained HTML page (inline SVG and
/// CSS, no script, nothing fetched): per kernel a heat map of the winners over the problem sizes, per
/// key every candidate's median with its p20-p80 spread, the failures with their reasons, and the
/// winner. Each key is a `<section class="key">`, each candidate bar an SVG `<g class="candidate">`.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/job/argument_pack.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::job {

/// What a report shows: results, grouped by kernel in the order given.
struct report_input {
  std::string title;
  std::string subtitle{};
  std::vector<tuning_result> results;
};

namespace detail {

[[nodiscard]] inline std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

/// The `name=integer` parts of a key text (`M=512, N=256, A: float32` gives M and N).
[[nodiscard]] inline std::vector<std::pair<std::string, std::int64_t>> key_numbers(std::string_view key) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::size_t at = 0;
  while (at <= key.size()) {
    auto end = key.find(", ", at);
    if (end == std::string_view::npos) end = key.size();
    const auto part = key.substr(at, end - at);
    if (auto eq = part.find('='); eq != std::string_view::npos) {
      const std::string num(part.substr(eq + 1));
      char* stop = nullptr;
      const long long v = std::strtoll(num.c_str(), &stop, 10);
      if (!num.empty() && stop && *stop == '\0') out.emplace_back(std::string(part.substr(0, eq)), v);
    }
    at = end + 2;
  }
  return out;
}

/// Eight colours told apart by most colour-blind readers (Okabe and Ito), then greys.
[[nodiscard]] inline std::string_view palette(std::size_t i) {
  static constexpr std::string_view colours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                 "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return i < 8 ? colours[i] : "#999999";
}

[[nodiscard]] inline std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms >= 100) return fmt::format("{:.1f} ms", ms);
  if (ms >= 1) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.2f} us", ms * 1000);
}

/// The heat map of one kernel's winners: x = the first numeric key variable, y = the second (or one row).
inline void heat_map(std::string& out, const std::vector<const tuning_result*>& rs) {
  std::vector<std::string> winners;
  auto colour_of = [&](const std::string& text) {
    auto it = std::find(winners.begin(), winners.end(), text);
    if (it == winners.end()) {
      winners.push_back(text);
      return winners.size() - 1;
    }
    return static_cast<std::size_t>(it - winners.begin());
  };
  const auto first = key_numbers(instance_key_text(rs.front()->key_text));
  if (first.empty()) return;
  const std::string xname = first[0].first, yname = first.size() > 1 ? first[1].first : "";
  std::set<std::int64_t> xs, ys;
  struct cell {
    std::int64_t x, y;
    std::size_t colour;
    double ms;
    std::string key;
  };
  std::vector<cell> cells;
  for (const auto* r : rs) {
    const auto nums = key_numbers(instance_key_text(r->key_text));
    std::optional<std::int64_t> x, y;
    for (const auto& [n, v] : nums) {
      if (n == xname) x = v;
      if (!yname.empty() && n == yname) y = v;
    }
    if (!x) continue;
    xs.insert(*x);
    ys.insert(y.value_or(0));
    cells.push_back({*x, y.value_or(0), colour_of(r->best().text()), r->candidates.at(r->winner).time[0],
                     instance_key_text(r->key_text)});
  }
  const std::vector<std::int64_t> xv(xs.begin(), xs.end()), yv(ys.begin(), ys.end());
  const int cw = 84, ch = 34, left = 90, top = 30;
  const int width = left + cw * static_cast<int>(xv.size()) + 10;
  const int height = top + ch * static_cast<int>(yv.size()) + 40;
  out += fmt::format("<h3>Winners over problem sizes</h3>\n<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"winner per problem size\">\n",
                     width, height);
  for (std::size_t i = 0; i < xv.size(); ++i)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">{}</text>\n",
                       left + cw * static_cast<int>(i) + cw / 2, top - 10, xv[i]);
  for (std::size_t j = 0; j < yv.size(); ++j)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">{}</text>\n", left - 8,
                       top + ch * static_cast<int>(j) + ch / 2 + 4, yname.empty() ? std::string() : fmt::format("{}={}", yname, yv[j]));
  for (const auto& c : cells) {
    const auto i = std::find(xv.begin(), xv.end(), c.x) - xv.begin();
    const auto j = std::find(yv.begin(), yv.end(), c.y) - yv.begin();
    const int px = left + cw * static_cast<int>(i), py = top + ch * static_cast<int>(j);
    out += fmt::format("<g class=\"cell\"><title>{}: #{} {}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                       "fill=\"{}\" stroke=\"#fff\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"cellt\">{}"
                       "</text></g>\n",
                       html_escape(c.key), c.colour, html_escape(winners[c.colour]), px, py, cw, ch,
                       palette(c.colour), px + cw / 2, py + ch / 2 + 4, html_escape(ms_text(c.ms)));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">{}</text>\n</svg>\n",
                     left + cw * static_cast<int>(xv.size()) / 2, height - 12, html_escape(xname));
  out += "<ul class=\"legend\">\n";
  for (std::size_t i = 0; i < winners.size(); ++i)
    out += fmt::format("<li><span class=\"swatch\" style=\"background:{}\"></span>#{} {}</li>\n", palette(i), i,
                       html_escape(winners[i]));
  out += "</ul>\n";
}

/// One key: a bar per candidate (median, with a p20-p80 whisker), then the failures.
inline void key_section(std::string& out, const tuning_result& r) {
  const std::string key = instance_key_text(r.key_text);
  out += fmt::format("<section class=\"key\" id=\"{}\">\n<h3>{}</h3>\n", html_escape(fmt::format("{}-{}", r.kernel, key)),
                     html_escape(key));
  out += fmt::format("<p class=\"meta\">winner: <b>{}</b> at {} median; measured on {} ({}) {}</p>\n",
                     html_escape(r.best().text()), html_escape(ms_text(r.candidates.at(r.winner).time[0])),
                     html_escape(r.made.device.empty() ? "?" : r.made.device), html_escape(r.made.host),
                     html_escape(r.made.date));
  double top_ms = 0;
  for (const auto& c : r.candidates)
    if (c.status == candidate_status::ok && std::isfinite(c.time[2])) top_ms = std::max(top_ms, c.time[2]);
  if (top_ms <= 0) top_ms = 1;
  const int row = 22, label_w = 380, bar_w = 420;
  const int height = row * static_cast<int>(r.candidates.size()) + 10;
  out += fmt::format("<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
                     "aria-label=\"median time per candidate\">\n",
                     label_w + bar_w + 170, height);
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    const int y = 5 + row * static_cast<int>(i);
    const bool ok = c.status == candidate_status::ok && std::isfinite(c.time[0]);
    std::string label = c.cfg.text();
    if (label.size() > 60) label = label.substr(0, 57) + "...";
    out += fmt::format("<g class=\"candidate{}\"><title>{}: {}</title>", i == r.winner ? " winner" : "",
                       html_escape(c.cfg.text()), html_escape(ok ? ms_text(c.time[0]) : std::string(to_string(c.status))));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text>", label_w - 6, y + 14,
                       html_escape(label));
    if (ok) {
      auto px = [&](double ms) { return label_w + static_cast<int>(bar_w * std::clamp(ms / top_ms, 0.0, 1.0)); };
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>", label_w, y + 3,
                         std::max(1, px(c.time[0]) - label_w), row - 6, i == r.winner ? "#009E73" : "#0072B2");
      out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-width=\"1.5\"/>",
                         px(c.time[1]), px(c.time[2]), y + row / 2, y + row / 2);
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"value\">{}{}</text>", px(c.time[2]) + 6, y + 14,
                         html_escape(ms_text(c.time[0])), i == r.winner ? " (winner)" : "");
    } else {
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"failed\">{}</text>", label_w + 4, y + 14,
                         html_escape(to_string(c.status)));
    }
    out += "</g>\n";
  }
  out += "</svg>\n";
  bool any_failed = false;
  for (const auto& c : r.candidates) any_failed = any_failed || (c.status != candidate_status::ok && c.status != candidate_status::not_run &&
                                         c.status != candidate_status::not_evaluated);
  if (any_failed) {
    out += "<table class=\"failures\"><tr><th>config</th><th>status</th><th>reason</th></tr>\n";
    for (const auto& c : r.candidates) {
      if (c.status == candidate_status::ok || c.status == candidate_status::not_run ||
          c.status == candidate_status::not_evaluated)
        continue;
      const std::string first_line = c.reason.substr(0, c.reason.find('\n'));
      out += fmt::format("<tr class=\"failure\"><td>{}</td><td>{}</td><td><details><summary>{}</summary><pre>{}</pre>"
                         "</details></td></tr>\n",
                         html_escape(c.cfg.text()), html_escape(to_string(c.status)),
                         html_escape(first_line.substr(0, 200)), html_escape(c.reason.substr(0, 4000)));
    }
    out += "</table>\n";
  }
  out += "</section>\n";
}

} // namespace detail

/// The page. Deterministic for given results (no clock is read).
[[nodiscard]] inline std::string html_report(const report_input& in) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<title>{}</title>\n", detail::html_escape(in.title));
  out += "<style>\nbody{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}"
         "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}h3{font-size:15px}"
         "section.key{margin:12px 0 20px}.meta{color:#555}.label,.axis,.value,.failed{font:12px monospace;fill:#222}"
         ".failed{fill:#D55E00}.cellt{font:11px monospace;fill:#fff}table.failures{border-collapse:collapse}"
         "table.failures td,table.failures th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
         "pre{white-space:pre-wrap;max-width:900px}ul.legend{list-style:none;padding:0}"
         ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px}\n</style>\n</head>\n<body>\n";
  out += fmt::format("<h1>{}</h1>\n", detail::html_escape(in.title));
  if (!in.subtitle.empty()) out += fmt::format("<p class=\"meta\">{}</p>\n", detail::html_escape(in.subtitle));
  std::vector<std::string> kernels;
  std::map<std::string, std::vector<const tuning_result*>> by_kernel;
  for (const auto& r : in.results) {
    if (!by_kernel.contains(r.kernel)) kernels.push_back(r.kernel);
    by_kernel[r.kernel].push_back(&r);
  }
  out += fmt::format("<p class=\"meta\">{} keys of {} kernels</p>\n", in.results.size(), kernels.size());
  for (const auto& k : kernels) {
    const auto& rs = by_kernel[k];
    out += fmt::format("<h2 class=\"kernel\">{} ({} keys)</h2>\n", detail::html_escape(k), rs.size());
    if (rs.size() > 1) detail::heat_map(out, rs);
    for (const auto* r : rs) detail::key_section(out, *r);
  }
  out += "</body>\n</html>\n";
  return out;
}

/// Writes `html_report(in)` to `file` atomically (a reader never sees half a page); throws
/// std::system_error naming the file when it cannot.
inline void write_html_report(const std::filesystem::path& file, const report_input& in) {
  cotune::detail::atomic_write(file, html_report(in));
}

} // namespace cotune::job
