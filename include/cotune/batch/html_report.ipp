#pragma once
/// \file The bodies of batch/html_report.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/batch/html_report.hpp>

namespace cotune::batch {

namespace detail {

COTUNE_DECL std::string html_escape(std::string_view s) {
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

COTUNE_DECL std::vector<std::pair<std::string, std::int64_t>> key_numbers(std::string_view key) {
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

COTUNE_DECL std::string_view palette(std::size_t i) {
  static constexpr std::string_view colours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                 "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return i < 8 ? colours[i] : "#999999";
}

COTUNE_DECL std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms >= 100) return fmt::format(COTUNE_FMT("{:.1f} ms"), ms);
  if (ms >= 1) return fmt::format(COTUNE_FMT("{:.3f} ms"), ms);
  return fmt::format(COTUNE_FMT("{:.2f} us"), ms * 1000);
}

COTUNE_DECL void heat_map(std::string& out, const std::vector<const tuning_result*>& rs) {
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
    cells.push_back({*x, y.value_or(0), colour_of(r->shown(r->best())), r->candidates.at(r->winner).time[0],
                     instance_key_text(r->key_text)});
  }
  const std::vector<std::int64_t> xv(xs.begin(), xs.end()), yv(ys.begin(), ys.end());
  // The y labels end at the cells: room for the longest at 12px monospace (7.2 px a character).
  std::size_t y_label = 0;
  for (auto y : yv) y_label = std::max(y_label, yname.empty() ? 0 : fmt::format(COTUNE_FMT("{}={}"), yname, y).size());
  const int cw = 84, ch = 34, top = 30, left = std::max(90, static_cast<int>(y_label) * 15 / 2 + 16);
  const int width = left + cw * static_cast<int>(xv.size()) + 10;
  const int height = top + ch * static_cast<int>(yv.size()) + 40;
  out += fmt::format(
      COTUNE_FMT("<h3>Winners over problem sizes</h3>\n<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
                 "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"winner per problem size\">\n"),
      width, height);
  for (std::size_t i = 0; i < xv.size(); ++i)
    out += fmt::format(COTUNE_FMT("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">{}</text>\n"),
                       left + cw * static_cast<int>(i) + cw / 2, top - 10, xv[i]);
  for (std::size_t j = 0; j < yv.size(); ++j)
    out += fmt::format(COTUNE_FMT("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">{}</text>\n"), left - 8,
                       top + ch * static_cast<int>(j) + ch / 2 + 4,
                       yname.empty() ? std::string() : fmt::format(COTUNE_FMT("{}={}"), yname, yv[j]));
  for (const auto& c : cells) {
    const auto i = std::find(xv.begin(), xv.end(), c.x) - xv.begin();
    const auto j = std::find(yv.begin(), yv.end(), c.y) - yv.begin();
    const int px = left + cw * static_cast<int>(i), py = top + ch * static_cast<int>(j);
    out += fmt::format(
        COTUNE_FMT("<g class=\"cell\"><title>{}: #{} {}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                   "fill=\"{}\" stroke=\"#fff\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"cellt\">{}"
                   "</text></g>\n"),
        html_escape(c.key), c.colour, html_escape(winners[c.colour]), px, py, cw, ch, palette(c.colour), px + cw / 2,
        py + ch / 2 + 4, html_escape(ms_text(c.ms)));
  }
  out += fmt::format(COTUNE_FMT("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">{}</text>\n</svg>\n"),
                     left + cw * static_cast<int>(xv.size()) / 2, height - 12, html_escape(xname));
  out += "<ul class=\"legend\">\n";
  for (std::size_t i = 0; i < winners.size(); ++i)
    out += fmt::format(COTUNE_FMT("<li><span class=\"swatch\" style=\"background:{}\"></span>#{} {}</li>\n"),
                       palette(i), i, html_escape(winners[i]));
  out += "</ul>\n";
}

COTUNE_DECL std::string counted(std::size_t n, std::string_view noun) {
  return fmt::format(COTUNE_FMT("{} {}{}"), n, noun, n == 1 ? "" : "s");
}

COTUNE_DECL std::string fragment_id(std::string_view text, std::set<std::string>& taken) {
  std::string id;
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (keep) id += c;
    else if (!id.empty() && id.back() != '-') id += '-';
  }
  while (!id.empty() && id.back() == '-') id.pop_back();
  if (id.empty()) id = "key";
  else if (!((id[0] >= 'a' && id[0] <= 'z') || (id[0] >= 'A' && id[0] <= 'Z'))) id.insert(0, "k-");
  std::string unique = id;
  for (int n = 2; taken.contains(unique); ++n) unique = fmt::format(COTUNE_FMT("{}-{}"), id, n);
  taken.insert(unique);
  return unique;
}

COTUNE_DECL std::string failure_summary(std::string_view reason) {
  const auto first_line = reason.substr(0, reason.find('\n'));
  for (std::size_t at = 0; at < reason.size();) {
    auto end = reason.find('\n', at);
    if (end == std::string_view::npos) end = reason.size();
    const auto line = reason.substr(at, end - at);
    // g++/clang `file:line:col: error:` and `fatal error:`, NVRTC and hipRTC `file(line): error:`.
    if (at > 0 && line.find("error:") != std::string_view::npos) return std::string(line);
    at = end + 1;
  }
  return std::string(first_line);
}

COTUNE_DECL void phase_table(std::string& out, const tuning_phases& p, std::string_view caption) {
  const double wall = p.wall.total() + p.idle_ms;
  if (!(wall > 0)) return;
  out += fmt::format(COTUNE_FMT("<table class=\"phases\"><caption>{}</caption>\n"
                                "<tr><th>phase</th><th>wall</th><th>share</th><th>busy (all threads)</th></tr>\n"),
                     html_escape(caption));
  const auto row = [&](std::string_view name, double ms, std::optional<double> busy) {
    out += fmt::format(COTUNE_FMT("<tr class=\"phase\" data-phase=\"{}\"><td>{}</td><td class=\"value\">{}</td>"
                                  "<td class=\"value\">{:.0f}%</td><td class=\"value\">{}</td></tr>\n"),
                       name, name, html_escape(ms_text(ms)), 100.0 * ms / wall,
                       busy ? html_escape(ms_text(*busy)) : std::string("-"));
  };
  row("compile", p.wall.compile, p.busy.compile);
  row("load", p.wall.load, p.busy.load);
  row("verify", p.wall.verify, p.busy.verify);
  row("measure", p.wall.measure, p.busy.measure);
  row("idle", p.idle_ms, std::nullopt);
  const double bound = p.lower_bound_ms();
  out += fmt::format(
      COTUNE_FMT("<tr class=\"bound\"><td colspan=\"4\">wall {} against the lower bound {} (compiles over {} "
                 "thread{}, or measurements over {} device{}): {}</td></tr>\n</table>\n"),
      html_escape(ms_text(wall)), html_escape(ms_text(bound)), p.compile_threads, p.compile_threads == 1 ? "" : "s",
      p.devices, p.devices == 1 ? "" : "s",
      bound > 0 ? fmt::format(COTUNE_FMT("{:.2f}x"), wall / bound) : std::string("-"));
}

COTUNE_DECL tuning_phases summed_phases(const std::vector<tuning_result>& rs) {
  tuning_phases sum;
  const auto add = [](phase_times& to, const phase_times& from) {
    to.compile += from.compile;
    to.load += from.load;
    to.verify += from.verify;
    to.measure += from.measure;
  };
  for (const auto& r : rs) {
    if (!r.phases.known()) continue;
    add(sum.wall, r.phases.wall);
    add(sum.busy, r.phases.busy);
    sum.idle_ms += r.phases.idle_ms;
    sum.compile_threads = std::max(sum.compile_threads, r.phases.compile_threads);
    sum.devices = std::max(sum.devices, r.phases.devices);
  }
  return sum;
}

COTUNE_DECL void key_section(std::string& out, const tuning_result& r, std::set<std::string>& ids) {
  const std::string key = instance_key_text(r.key_text);
  const std::string id = fragment_id(fmt::format(COTUNE_FMT("{}-{}"), r.kernel, key), ids);
  out += fmt::format(COTUNE_FMT("<section class=\"key\" id=\"{}\">\n<h3><a href=\"#{}\">{}</a></h3>\n"), id, id,
                     html_escape(key));
  out += fmt::format(COTUNE_FMT("<p class=\"meta\">winner: <b>{}</b> at {} median; measured on {} ({}) {}</p>\n"),
                     html_escape(r.shown(r.best())), html_escape(ms_text(r.candidates.at(r.winner).time[0])),
                     html_escape(r.made.device.empty() ? "?" : r.made.device), html_escape(r.made.host),
                     html_escape(r.made.date));
  if (r.phases.known()) phase_table(out, r.phases, "where this tuning's time went");
  const auto scale = bar_scale::of(r);
  const int bar_w = 400, bar_h = 16;
  out += "<table class=\"bars\">\n";
  out += fmt::format(COTUNE_FMT("<caption>median per candidate, whisker p20-p80; linear scale, 0 to {}{}</caption>\n"),
                     html_escape(ms_text(scale.top_ms)),
                     scale.clips
                         ? fmt::format(COTUNE_FMT("; bars marked &#187; are clipped (slower than {} times the typical "
                                                  "median; their time is printed)"),
                                       bar_scale::outlier_factor)
                         : std::string());
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    const bool ok = c.status == candidate_status::ok && std::isfinite(c.time[0]);
    const bool clipped = ok && scale.clipped(c.time[0]);
    const std::string label = r.shown(c.cfg);
    out += fmt::format(COTUNE_FMT("<tr class=\"candidate{}{}\"><td class=\"label\">{}</td><td class=\"bar\">"),
                       i == r.winner ? " winner" : "", clipped ? " clipped" : "", html_escape(label));
    out += fmt::format(COTUNE_FMT("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
                                  "aria-label=\"{}\"><g class=\"candidate\"><title>{}: {}</title>"),
                       bar_w, bar_h, ok ? "median, p20 to p80" : "failed", html_escape(label),
                       html_escape(ok ? ms_text(c.time[0]) : std::string(to_string(c.status))));
    if (ok) {
      out += fmt::format(COTUNE_FMT("<rect x=\"0\" y=\"2\" width=\"{}\" height=\"{}\" fill=\"{}\"/>"),
                         std::max(1, scale.at(c.time[0], bar_w)), bar_h - 4, i == r.winner ? "#009E73" : "#0072B2");
      if (clipped) {
        // A white notch across the bar's end: the bar goes on beyond the scale.
        out += fmt::format(COTUNE_FMT("<path d=\"M{} 0 l6 {} M{} 0 l6 {}\" stroke=\"#fff\" stroke-width=\"2\"/>"),
                           bar_w - 16, bar_h, bar_w - 11, bar_h);
      } else if (std::isfinite(c.time[1]) && std::isfinite(c.time[2])) {
        out += fmt::format(
            COTUNE_FMT("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-width=\"1.5\"/>"),
            scale.at(c.time[1], bar_w), std::max(scale.at(c.time[2], bar_w), 1), bar_h / 2, bar_h / 2);
      }
    }
    out += "</g></svg></td>";
    if (ok)
      out += fmt::format(COTUNE_FMT("<td class=\"value\">{}{}{}</td></tr>\n"), clipped ? "&#187; " : "",
                         html_escape(ms_text(c.time[0])), i == r.winner ? " (winner)" : "");
    else
      out += fmt::format(COTUNE_FMT("<td class=\"value failed\">{}</td></tr>\n"), html_escape(to_string(c.status)));
  }
  out += "</table>\n";
  const auto failed = [](const candidate_result& c) {
    return c.status != candidate_status::ok && c.status != candidate_status::not_run &&
           c.status != candidate_status::not_evaluated;
  };
  if (std::any_of(r.candidates.begin(), r.candidates.end(), failed)) {
    out += "<table class=\"failures\"><tr><th>config</th><th>status</th><th>reason</th></tr>\n";
    for (const auto& c : r.candidates) {
      if (!failed(c)) continue;
      out += fmt::format(
          COTUNE_FMT("<tr class=\"failure\"><td>{}</td><td>{}</td><td><details><summary>{}</summary><pre>{}</pre>"
                     "</details></td></tr>\n"),
          html_escape(r.shown(c.cfg)), html_escape(to_string(c.status)),
          html_escape(failure_summary(c.reason).substr(0, 300)), html_escape(c.reason.substr(0, 4000)));
    }
    out += "</table>\n";
  }
  out += "</section>\n";
}

COTUNE_DECL void page_start(std::string& out, std::string_view title, std::string_view extra_css) {
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format(COTUNE_FMT("<title>{}</title>\n"), html_escape(title));
  out += "<style>\nbody{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}"
         "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}h3{font-size:15px}"
         "section.key{margin:12px 0 20px}.meta{color:#555}.label,.axis,.value,.failed{font:12px monospace;fill:#222}"
         "h3 a{color:inherit;text-decoration:none}.failed{fill:#D55E00;color:#D55E00}.cellt{font:11px monospace;fill:#fff}"
         "table.bars{border-collapse:collapse}table.bars caption{text-align:left;color:#555;font-size:12px}"
         "table.bars td{padding:1px 6px;vertical-align:middle}table.bars td.label{text-align:right;width:380px;"
         "overflow-wrap:anywhere}table.bars td.bar{padding:0;line-height:0}table.bars svg{display:block}"
         "table.bars td.value{white-space:nowrap}table.failures{border-collapse:collapse;margin-top:8px}"
         "table.failures td,table.failures th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
         "pre{white-space:pre-wrap;max-width:900px}ul.legend{list-style:none;padding:0}"
         ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px}"
         "table.phases{border-collapse:collapse;margin:6px 0}table.phases caption{text-align:left;color:#555;"
         "font-size:12px}table.phases td,table.phases th{padding:1px 8px;text-align:left}";
  out += extra_css;
  out += "\n</style>\n</head>\n<body>\n";
}

} // namespace detail

COTUNE_DECL std::string html_report(const report_input& in) {
  std::string out;
  detail::page_start(out, in.title);
  out += fmt::format(COTUNE_FMT("<h1>{}</h1>\n"), detail::html_escape(in.title));
  if (!in.subtitle.empty())
    out += fmt::format(COTUNE_FMT("<p class=\"meta\">{}</p>\n"), detail::html_escape(in.subtitle));
  std::vector<std::string> kernels;
  std::map<std::string, std::vector<const tuning_result*>> by_kernel;
  for (const auto& r : in.results) {
    if (!by_kernel.contains(r.kernel)) kernels.push_back(r.kernel);
    by_kernel[r.kernel].push_back(&r);
  }
  out += fmt::format(COTUNE_FMT("<p class=\"meta\">{} of {}</p>\n"), detail::counted(in.results.size(), "key"),
                     detail::counted(kernels.size(), "kernel"));
  if (const auto phases = detail::summed_phases(in.results); phases.known() && in.results.size() > 1)
    detail::phase_table(out, phases, "where the tunings' time went (all keys measured with phases, added up)");
  std::set<std::string> ids;
  for (const auto& k : kernels) {
    const auto& rs = by_kernel[k];
    out += fmt::format(COTUNE_FMT("<h2 class=\"kernel\" id=\"{}\">{} ({})</h2>\n"), detail::fragment_id(k, ids),
                       detail::html_escape(k), detail::counted(rs.size(), "key"));
    if (rs.size() > 1) detail::heat_map(out, rs);
    for (const auto* r : rs) detail::key_section(out, *r, ids);
  }
  out += "</body>\n</html>\n";
  return out;
}

COTUNE_DECL void write_html_report(const std::filesystem::path& file, const report_input& in) {
  cotune::detail::atomic_write(file, html_report(in));
}

} // namespace cotune::batch

namespace cotune::batch::detail {

COTUNE_DECL bar_scale bar_scale::of(const tuning_result& r) {
  std::vector<double> medians;
  double slowest = 0;
  for (const auto& c : r.candidates)
    if (c.status == candidate_status::ok && std::isfinite(c.time[0])) {
      medians.push_back(c.time[0]);
      slowest = std::max(slowest, std::isfinite(c.time[2]) ? std::max(c.time[0], c.time[2]) : c.time[0]);
    }
  bar_scale s;
  if (medians.empty() || slowest <= 0) return s;
  std::sort(medians.begin(), medians.end());
  const double cap = outlier_factor * medians[medians.size() / 2];
  s.clips = cap > 0 && slowest > cap;
  s.top_ms = s.clips ? cap : slowest;
  return s;
}

} // namespace cotune::batch::detail
