#pragma once
/// \file The bodies of tune/events.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <variant>

#include <fmt/core.h>

#include <cotune/tune/events.hpp>

namespace cotune {

COTUNE_DECL void printing_observer::on_event(const tuning_event& e) {
  std::lock_guard lock(mutex_);
  std::visit([this](const auto& ev) { handle(ev); }, e);
}

COTUNE_DECL void printing_observer::handle(const tuning_started& e) {
  done_ = 0;
  if (progress_)
    fmt::print(out_, COTUNE_FMT("\rcotune: tuning {} [{}]: 0/{} candidates"), e.kernel, e.key_text, e.candidates);
}

COTUNE_DECL void printing_observer::step(const std::string& kernel, const std::string& key, std::size_t total) {
  ++done_;
  if (progress_) fmt::print(out_, COTUNE_FMT("\rcotune: tuning {} [{}]: {}/{} candidates"), kernel, key, done_, total);
}

COTUNE_DECL void printing_observer::handle(const tuning_warning& e) {
  if (progress_) fmt::print(out_, COTUNE_FMT("\r\033[K"));
  fmt::print(out_, COTUNE_FMT("cotune: warning: {}: {}\n"), e.kernel, e.message);
  std::fflush(out_);
}

COTUNE_DECL void printing_observer::handle(const cache_hit& e) {
  if (!summary_) return;
  // Layers are "file", "remote", a user's cache name, or "shipped tuning database".
  const bool database = e.layer.find("database") != std::string::npos;
  fmt::print(out_, COTUNE_FMT("cotune: {} [{}]: tuning result from the {}{}\n"), e.kernel, e.key_text, e.layer,
             database ? "" : " cache");
}

COTUNE_DECL void printing_observer::handle(const stand_in_served& e) {
  if (!summary_) return;
  fmt::print(out_, COTUNE_FMT("cotune: {} [{}]: served by a stand-in ({}{}: {}) while it tunes in the background\n"),
             e.kernel, e.key_text, to_string(e.source), e.neighbour.empty() ? "" : " [" + e.neighbour + "]",
             e.cfg ? e.cfg->text() : std::string("?"));
  std::fflush(out_);
}

COTUNE_DECL void printing_observer::handle(const stand_in_replaced& e) {
  if (!summary_ || !e.winner) return;
  const auto& b = e.background;
  const std::string measured =
      b.share > 0
          ? fmt::format(
                COTUNE_FMT("; measured within {:.0f}% of the device: {} pauses ({:.1f} ms), {} noisy measurements "
                           "taken again, finals repeated {} times"),
                100 * b.share, b.pauses, b.paused_ms, b.remeasured, b.final_repeats)
          : std::string();
  fmt::print(out_,
             COTUNE_FMT("cotune: {} [{}]: the tuned winner {} replaced the stand-in after {} calls ({:.1f} ms{})\n"),
             e.kernel, e.key_text, e.winner->text(), e.calls_served, e.served_ms, measured);
  std::fflush(out_);
}

COTUNE_DECL void printing_observer::handle(const tuning_selected& e) {
  if (progress_) fmt::print(out_, COTUNE_FMT("\r\033[K"));
  const auto& r = *e.result;
  // Triton prints only what it measured: a result read from a cache was announced by its cache_hit line.
  if (!summary_ || r.from_cache) return;
  // Where the time went, when the tuning recorded it (tune/tuning_phases.hpp).
  const std::string phases = r.phases.known() ? ": " + r.phases.text() : std::string();
  // A tuning killed during its finals resumes the rounds its journal holds (tune/detail/tuning_recovery.hpp).
  const std::string rounds =
      r.final_rounds_resumed
          ? fmt::format(COTUNE_FMT(" ({} rounds of the finals resumed from the journal)"), r.final_rounds_resumed)
          : std::string();
  fmt::print(out_,
             COTUNE_FMT("cotune autotuning for kernel {},\nwith key as ({}),\nfinished after {:.2f}s{}{}{},\nbest "
                        "config selected: {};\n"),
             r.kernel, r.key_text, r.wall_ms / 1000.0, phases, r.from_cache ? " (from cache)" : "", rounds,
             r.shown(r.best()));
  print_table(out_, r);
  std::fflush(out_);
}

COTUNE_DECL void printing_observer::print_table(std::FILE* out, const tuning_result& r) {
  bool same_launch = true;
  for (const auto& c : r.candidates) same_launch = same_launch && c.cfg.launch() == r.candidates.front().cfg.launch();
  auto shown = [&](const config& c) {
    if (!r.launch_options) return c.params_text();
    if (!same_launch || c.params().empty()) return c.text();
    std::string t;
    for (const auto& [name, v] : c.params())
      t += (t.empty() ? "" : ", ") + fmt::format(COTUNE_FMT("{}: {}"), name, v.text());
    if (c.pre_hook()) t += ", pre_hook: " + c.pre_hook()->name;
    return t;
  };
  std::size_t width = 6;
  for (const auto& c : r.candidates) width = std::max(width, shown(c.cfg).size());
  width = std::min<std::size_t>(width, 100);
  // How each was measured, where the benchmarker says (a GPU batch of short launches, the noise).
  bool methods = false;
  for (const auto& c : r.candidates) methods = methods || !c.method.empty();
  auto how = [&](const candidate_result& c) {
    if (!methods) return std::string();
    if (c.method.empty()) return fmt::format(COTUNE_FMT("  {:<20}  {:>6}"), "", "");
    if (c.method == single_config_method) return fmt::format(COTUNE_FMT("  {:<20}  {:>6}"), c.method, "-");
    return fmt::format(COTUNE_FMT("  {:<20}  {:>5.2f}%"), c.method, 100.0 * c.rsd);
  };
  // After screening, a finalist's time is its finals' (the full budget, interleaved with the other finalists)
  // and a screened-only candidate's its short screening pass's: two passes that differ in budget and
  // conditions, whose times do not compare. The screening column compares every row; the finals columns
  // compare the finalists, among whom the winner was picked.
  bool finals = false;
  for (const auto& c : r.candidates) finals = finals || c.screened_only || c.interleaved || std::isfinite(c.screen_ms);
  auto num = [](double v) { return std::isfinite(v) ? fmt::format(COTUNE_FMT("{:.4f}"), v) : std::string("-"); };
  if (finals)
    fmt::print(out, COTUNE_FMT("  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}  {:>10}{}\n"), "#", "config", width,
               "status", "screen ms", "final ms", "p20 ms", "p80 ms",
               methods ? fmt::format(COTUNE_FMT("  {:<20}  {:>6}"), "method", "noise") : std::string());
  else
    fmt::print(out, COTUNE_FMT("  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}{}\n"), "#", "config", width, "status",
               "median ms", "p20 ms", "p80 ms",
               methods ? fmt::format(COTUNE_FMT("  {:<20}  {:>6}"), "method", "noise") : std::string());
  std::size_t unevaluated = 0;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    if (c.status == candidate_status::not_evaluated) { // a search of thousands: the table shows what it measured
      ++unevaluated;
      continue;
    }
    std::string status{to_string(c.status)};
    if (c.status == candidate_status::ok && c.screened_only) status = "ok (screened)";
    if (c.status == candidate_status::ok && c.interleaved) status = "ok (final)";
    if (c.resumed) status += " (resumed)";
    if (i == r.winner) status = "* best";
    if (finals) {
      const bool screened = c.screened_only || !std::isfinite(c.time[0]);
      const double screen = c.screened_only ? c.time[0] : c.screen_ms;
      fmt::print(out, COTUNE_FMT("  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}  {:>10}{}\n"), i,
                 shown(c.cfg).substr(0, width), width, status, num(screen), screened ? "-" : num(c.time[0]),
                 screened ? "-" : num(c.time[1]), screened ? "-" : num(c.time[2]), how(c));
    } else {
      const bool untimed = c.method == single_config_method; // nothing was timed: no time to show
      fmt::print(out, COTUNE_FMT("  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}{}\n"), i,
                 shown(c.cfg).substr(0, width), width, status, untimed ? "-" : num(c.time[0]),
                 untimed ? "-" : num(c.time[1]), untimed ? "-" : num(c.time[2]), how(c));
    }
    if (c.status != candidate_status::ok && c.status != candidate_status::not_run) {
      auto first_line = c.reason.substr(0, c.reason.find('\n'));
      fmt::print(out, COTUNE_FMT("       {}\n"), first_line.substr(0, 160));
    }
  }
  if (finals)
    fmt::print(
        out, COTUNE_FMT(
                 "  (screen ms: every candidate's median in the short screening pass, comparable down the column;\n"
                 "   final ms, p20, p80: the finalists' full-budget finals, interleaved, where the winner was picked.\n"
                 "   The two passes differ in budget and conditions: compare times within a column, not across.)\n"));
  if (r.candidates.size() == 1 && r.candidates.front().method == single_config_method)
    fmt::print(out,
               COTUNE_FMT("  (one candidate: nothing to choose, so it ran once and was not timed, as in Triton)\n"));
  if (unevaluated)
    fmt::print(out, COTUNE_FMT("  ({} of {} candidates not evaluated: the search strategy stopped at its budget)\n"),
               unevaluated, r.candidates.size());
}

} // namespace cotune
