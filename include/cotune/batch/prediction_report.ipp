#pragma once
/// \file The bodies of batch/prediction_report.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/batch/html_report.hpp>
#include <cotune/batch/prediction.hpp>
#include <cotune/batch/prediction_report.hpp>
#include <cotune/detail/dir_fd.hpp>

namespace cotune::batch {

namespace detail {

/// The class of a grid cell and a table row by the prediction's regret: within the 2% of
/// held_out_summary::near, within 10% (a prediction worth serving until the key is tuned), beyond,
/// or not measured.
[[nodiscard]] inline std::string_view regret_class(const held_out_key* h) {
  if (!h || !h->regret) return "unknown";
  if (*h->regret <= held_out_summary::near) return "good";
  return *h->regret <= 0.10 ? "fair" : "poor";
}

[[nodiscard]] inline std::string regret_text(const held_out_key& h) {
  if (!h.regret) return "not measured";
  return *h.regret == 0 ? std::string("0% (the same config)") : fmt::format(COTUNE_FMT("{:.1f}%"), 100 * *h.regret);
}

/// The summary line of some held-out keys.
[[nodiscard]] inline std::string summary_text(const held_out_summary& s) {
  std::string out = fmt::format(COTUNE_FMT("{} predicted from the others"), counted(s.keys, "key"));
  if (s.measured == 0) return out + "; no prediction's time is in the database (exported without candidates)";
  out += fmt::format(
      COTUNE_FMT("; regret measured for {}: mean {:.1f}%, median {:.1f}%, worst {:.1f}%; {} of {} ({:.0f}%) "
                 "within 2% of the tuned winner, {} the tuned winner itself"),
      s.measured, 100 * s.mean, 100 * s.median, 100 * s.worst, s.within, s.measured,
      100.0 * static_cast<double>(s.within) / static_cast<double>(s.measured), s.exact);
  if (s.measured < s.keys) out += fmt::format(COTUNE_FMT("; {} not measured"), s.keys - s.measured);
  return out;
}

/// One kernel on one device: its grid, its legend, its table of keys.
inline void prediction_section(std::string& out, std::vector<const database_entry*> entries,
                               const std::map<const database_entry*, const held_out_key*>& held,
                               std::set<std::string>& ids, bool with_summary) {
  const auto numbers = [](const database_entry* e) {
    std::vector<std::int64_t> v;
    for (const auto& [n, x] : key_numbers(e->key)) v.push_back(x);
    return v;
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const database_entry* a, const database_entry* b) { return numbers(a) < numbers(b); });
  const auto& first = *entries.front();
  // A winners-only entry does not say whether its backend uses launch options; the host backend's
  // device names (`host (x86_64,Linux,...)`) say it does not (as `cotune report` reads them).
  const bool launch_options = first.launch_options && !first.device.starts_with("host (");
  const auto shown = [&](const config& c) { return launch_options ? c.text() : c.params_text(); };
  std::vector<held_out_key> keys;
  for (const auto* e : entries)
    if (auto it = held.find(e); it != held.end()) keys.push_back(*it->second);
  const auto summary = held_out_summary::of(keys);
  out += fmt::format(COTUNE_FMT("<h2 class=\"kernel\" id=\"{}\">{} on {} ({})</h2>\n"),
                     fragment_id(fmt::format(COTUNE_FMT("{}-{}"), first.kernel, first.device), ids),
                     html_escape(first.kernel), html_escape(first.device), counted(entries.size(), "key"));
  if (with_summary) out += fmt::format(COTUNE_FMT("<p class=\"summary\">{}</p>\n"), html_escape(summary_text(summary)));

  // Every config named in the section, numbered in order of appearance: tuned winners, then predictions.
  std::vector<std::string> configs;
  const auto number = [&](const config& c) {
    const auto text = shown(c);
    auto it = std::find(configs.begin(), configs.end(), text);
    if (it != configs.end()) return static_cast<std::size_t>(it - configs.begin());
    configs.push_back(text);
    return configs.size() - 1;
  };
  for (const auto* e : entries) (void)number(e->winner);
  for (const auto& h : keys) (void)number(h.predicted);
  std::map<const database_entry*, std::string> row_id;
  for (const auto* e : entries) row_id[e] = fragment_id(fmt::format(COTUNE_FMT("{}-{}"), e->kernel, e->key), ids);

  // The grid: columns by the key's first number, rows by its other numbers.
  const auto firsts = key_numbers(entries.front()->key);
  if (!firsts.empty()) {
    const std::string xname = firsts.front().first;
    std::set<std::int64_t> xs;
    std::vector<std::string> rows;
    std::map<std::pair<std::string, std::int64_t>, const database_entry*> at;
    std::map<std::string, std::vector<std::int64_t>> row_numbers;
    for (const auto* e : entries) {
      std::optional<std::int64_t> x;
      std::string rest; // the key's other numbers
      for (const auto& [n, v] : key_numbers(e->key)) {
        if (n == xname) x = v;
        else
          rest += fmt::format(COTUNE_FMT("{}{}={}"), rest.empty() ? "" : ", ", n, v);
      }
      if (x) {
        row_numbers[rest].clear();
        for (const auto& [n, v] : key_numbers(e->key))
          if (n != xname) row_numbers[rest].push_back(v);
      }
      if (!x) continue;
      if (at.contains({rest, *x})) continue; // the same numbers twice (other element types): in the table only
      if (std::find(rows.begin(), rows.end(), rest) == rows.end()) rows.push_back(rest);
      xs.insert(*x);
      at[{rest, *x}] = e;
    }
    std::sort(rows.begin(), rows.end(),
              [&](const std::string& a, const std::string& b) { return row_numbers[a] < row_numbers[b]; });
    out += "<h3>Tuned and predicted over problem sizes</h3>\n<p class=\"meta\">A cell per key: the tuned winner (T) "
           "and the config predicted from the other keys (P), numbered as in the legend below, and the prediction's "
           "regret, coloured: within 2% of the tuned winner (green), within 10% (yellow), beyond (red), or not "
           "measured (grey).</p>\n<table class=\"grid\">\n";
    out += fmt::format(COTUNE_FMT("<tr><th class=\"corner\"><span class=\"axis\">{}</span></th>"), html_escape(xname));
    for (auto x : xs) out += fmt::format(COTUNE_FMT("<th><span class=\"axis\">{}</span></th>"), x);
    out += "</tr>\n";
    for (const auto& row : rows) {
      out +=
          fmt::format(COTUNE_FMT("<tr><th><span class=\"axis\">{}</span></th>"), html_escape(row.empty() ? "-" : row));
      for (auto x : xs) {
        const auto it = at.find({row, x});
        if (it == at.end()) {
          out += "<td class=\"empty\"></td>";
          continue;
        }
        const auto* e = it->second;
        const auto h = held.find(e);
        const held_out_key* k = h == held.end() ? nullptr : h->second;
        const auto swatch = [](std::size_t n) {
          return fmt::format(COTUNE_FMT("<span class=\"swatch\" style=\"background:{}\"></span>"), palette(n));
        };
        const auto tuned = number(e->winner);
        out += fmt::format(COTUNE_FMT("<td class=\"cell {}\"><a href=\"#{}\" title=\"{}\">"), regret_class(k),
                           row_id[e], html_escape(e->key));
        out += fmt::format(COTUNE_FMT("<span class=\"label\">{}T #{}</span>"), swatch(tuned), tuned);
        if (k) {
          const auto predicted = number(k->predicted);
          out += fmt::format(COTUNE_FMT("<span class=\"label\">{}P #{}</span><span class=\"value\">{}</span>"),
                             swatch(predicted), predicted,
                             html_escape(k->regret ? fmt::format(COTUNE_FMT("{:.1f}%"), 100 * *k->regret)
                                                   : std::string("not measured")));
        } else {
          out += "<span class=\"value\">no neighbour</span>";
        }
        out += "</a></td>";
      }
      out += "</tr>\n";
    }
    out += "</table>\n";
  }
  out += "<ul class=\"legend\">\n";
  for (std::size_t i = 0; i < configs.size(); ++i)
    out +=
        fmt::format(COTUNE_FMT("<li><span class=\"swatch\" style=\"background:{}\"></span><span class=\"label\">#{} {}"
                               "</span></li>\n"),
                    palette(i), i, html_escape(configs[i]));
  out += "</ul>\n";

  out += "<table class=\"keys\">\n<tr><th>key</th><th>tuned winner</th><th>median</th><th>predicted</th>"
         "<th>from the winner of</th><th>median</th><th>regret</th></tr>\n";
  for (const auto* e : entries) {
    const auto h = held.find(e);
    const held_out_key* k = h == held.end() ? nullptr : h->second;
    out += fmt::format(
        COTUNE_FMT("<tr class=\"key {}\" id=\"{}\"><td class=\"label\">{}</td><td class=\"label\">#{} {}</td>"
                   "<td class=\"value\">{}</td>"),
        regret_class(k), row_id[e], html_escape(e->key), number(e->winner), html_escape(shown(e->winner)),
        html_escape(ms_text(e->time[0])));
    if (k)
      out += fmt::format(
          COTUNE_FMT("<td class=\"label\">#{} {}</td><td class=\"label\">{}</td><td class=\"value\">{}</td>"
                     "<td class=\"value\">{}</td></tr>\n"),
          number(k->predicted), html_escape(shown(k->predicted)), html_escape(k->neighbour),
          html_escape(k->predicted_ms ? ms_text(*k->predicted_ms) : std::string("-")), html_escape(regret_text(*k)));
    else
      out += "<td class=\"label\" colspan=\"3\">no other key of its shape to predict it from</td>"
             "<td class=\"value\">-</td></tr>\n";
  }
  out += "</table>\n";
}

} // namespace detail

COTUNE_DECL std::string prediction_report(const tuning_database& db, std::string_view title) {
  const auto held = held_out_regret(db);
  // held_out_regret keeps the database's order and leaves out keys without a neighbour: pair them up.
  std::map<const database_entry*, const held_out_key*> of_entry;
  std::size_t next = 0;
  for (const auto& e : db.entries())
    if (next < held.size() && held[next].kernel == e.kernel && held[next].key == e.key && held[next].device == e.device)
      of_entry[&e] = &held[next++];
  std::vector<std::pair<std::string, std::string>> groups;
  std::set<std::string> kernels;
  std::map<std::pair<std::string, std::string>, std::vector<const database_entry*>> by_group;
  for (const auto& e : db.entries()) {
    const std::pair<std::string, std::string> g{e.kernel, e.device};
    if (!by_group.contains(g)) groups.push_back(g);
    kernels.insert(e.kernel);
    by_group[g].push_back(&e);
  }
  std::string out;
  detail::page_start(
      out, title,
      "p.summary{font-weight:600}table.grid{border-collapse:collapse;margin:6px 0}table.grid caption{text-align:left;"
      "color:#555;font-size:12px;max-width:900px}table.grid th{padding:2px 8px;font-weight:normal;text-align:right}"
      "table.grid td{border:1px solid #fff;padding:4px 8px;vertical-align:top;min-width:90px}"
      "table.grid td a{color:#222;text-decoration:none}table.grid td span.label,table.grid td span.value{display:block;"
      "white-space:nowrap}td.good,tr.good td{background:#d6f0e5}td.fair,tr.fair td{background:#fbe9c6}"
      "td.poor,tr.poor td{background:#f6d2bf}td.unknown,tr.unknown td{background:#eee}td.empty{background:#fafafa}"
      "table.keys{border-collapse:collapse;margin-top:8px}table.keys th{text-align:left;padding:2px 6px}"
      "table.keys td{border:1px solid #fff;padding:2px 6px;vertical-align:top}table.keys td.label{max-width:360px;"
      "overflow-wrap:break-word}table.keys td.value{white-space:nowrap}ul.legend li .label{overflow-wrap:anywhere}");
  out += fmt::format(COTUNE_FMT("<h1>{}</h1>\n"), detail::html_escape(title));
  out += fmt::format(
      COTUNE_FMT("<p class=\"meta\">{} of {}: each key's winner predicted from the other keys of its kernel and "
                 "device (the winner of the nearest key of the same shape, its numbers on a log scale), and the "
                 "prediction's regret (its median over the tuned winner's, from the key's own measurements)</p>\n"),
      detail::counted(db.size(), "key"), detail::counted(kernels.size(), "kernel"));
  out += fmt::format(COTUNE_FMT("<p class=\"summary\" id=\"summary\">{}</p>\n"),
                     detail::html_escape(detail::summary_text(held_out_summary::of(held))));
  std::set<std::string> ids{"summary"};
  for (const auto& g : groups) detail::prediction_section(out, by_group[g], of_entry, ids, groups.size() > 1);
  out += "</body>\n</html>\n";
  return out;
}

COTUNE_DECL void write_prediction_report(const std::filesystem::path& file, const tuning_database& db,
                                         std::string_view title) {
  cotune::detail::atomic_write(file, prediction_report(db, title));
}

} // namespace cotune::batch
