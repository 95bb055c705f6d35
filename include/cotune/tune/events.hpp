#pragma once
/// \file Typed tuning events and the observers that receive them.

#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// A tuning of one key begins.
struct tuning_started {
  std::string kernel, key_text;
  std::size_t candidates = 0, devices = 0;
};
/// A candidate was compiled (or its binary found in the cache).
struct candidate_compiled {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const config* cfg = nullptr;
  double compile_ms = 0;
  bool from_cache = false;
};
/// A candidate failed (compile, resources, launch, timeout); tuning goes on.
struct candidate_failed {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const candidate_result* result = nullptr;
};
/// A candidate was measured.
struct candidate_measured {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const candidate_result* result = nullptr;
};
/// The winner of a key is known (measured now, or read from the result cache).
struct tuning_selected {
  const tuning_result* result = nullptr;
};
/// A key's result came from a cache layer ("file", "remote", or a user's cache).
struct cache_hit {
  std::string kernel, key_text, layer;
};

/// Something went wrong that does not stop the tuning (the result cache is unusable, a result could
/// not be stored): the tuning goes on, and observers decide what to tell whom.
struct tuning_warning {
  std::string kernel, message;
};

using tuning_event = std::variant<tuning_started, candidate_compiled, candidate_failed, candidate_measured,
                                  tuning_selected, cache_hit, tuning_warning>;

/// Receives tuning events. Events of one tuning arrive in order, from one thread at a time.
class observer {
public:
  virtual ~observer() = default;
  void notify(const tuning_event& e) { on_event(e); }

protected:
  virtual void on_event(const tuning_event& e) = 0;
};

/// Prints what COTUNE_PRINT_AUTOTUNING asks for: a summary like Triton's (kernel, key, wall time,
/// best config) and a table of every candidate with its status. Also a progress line on a terminal.
/// Warnings are printed whatever it was asked for.
class printing_observer final : public observer {
public:
  explicit printing_observer(std::FILE* out = stderr, bool summary = true, bool progress = true)
      : out_(out), summary_(summary), progress_(progress && ::isatty(::fileno(out))) {}

protected:
  void on_event(const tuning_event& e) override {
    std::lock_guard lock(mutex_);
    std::visit([this](const auto& ev) { handle(ev); }, e);
  }

private:
  void handle(const tuning_started& e) {
    done_ = 0;
    if (progress_) fmt::print(out_, "\rcotune: tuning {} [{}]: 0/{} candidates", e.kernel, e.key_text, e.candidates);
  }
  void handle(const candidate_compiled&) {}
  void handle(const candidate_failed& e) { step(e.kernel, e.key_text, e.total); }
  void handle(const candidate_measured& e) { step(e.kernel, e.key_text, e.total); }
  void step(const std::string& kernel, const std::string& key, std::size_t total) {
    ++done_;
    if (progress_) fmt::print(out_, "\rcotune: tuning {} [{}]: {}/{} candidates", kernel, key, done_, total);
  }
  void handle(const tuning_warning& e) {
    if (progress_) fmt::print(out_, "\r\033[K");
    fmt::print(out_, "cotune: warning: {}: {}\n", e.kernel, e.message);
    std::fflush(out_);
  }
  void handle(const cache_hit& e) {
    if (summary_) fmt::print(out_, "cotune: {} [{}]: tuning result from the {} cache\n", e.kernel, e.key_text, e.layer);
  }
  void handle(const tuning_selected& e) {
    if (progress_) fmt::print(out_, "\r\033[K");
    if (!summary_) return;
    const auto& r = *e.result;
    fmt::print(out_, "cotune autotuning for kernel {},\nwith key as ({}),\nfinished after {:.2f}s{},\nbest config selected: {};\n",
               r.kernel, r.key_text, r.wall_ms / 1000.0, r.from_cache ? " (from cache)" : "", r.shown(r.best()));
    print_table(out_, r);
    std::fflush(out_);
  }

public:
  /// The candidate table: config, status, median/p20/p80 in ms, how each was measured and its noise
  /// (where the benchmarker says), and the first line of each failure.
  /// Launch options are shown only when they differ between candidates.
  static void print_table(std::FILE* out, const tuning_result& r) {
    bool same_launch = true;
    for (const auto& c : r.candidates) same_launch = same_launch && c.cfg.launch() == r.candidates.front().cfg.launch();
    auto shown = [&](const config& c) {
      if (!r.launch_options) return c.params_text();
      if (!same_launch || c.params().empty()) return c.text();
      std::string t;
      for (const auto& [name, v] : c.params()) t += (t.empty() ? "" : ", ") + fmt::format("{}: {}", name, v.text());
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
      if (c.method.empty()) return fmt::format("  {:<20}  {:>6}", "", "");
      return fmt::format("  {:<20}  {:>5.2f}%", c.method, 100.0 * c.rsd);
    };
    fmt::print(out, "  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}{}\n", "#", "config", width, "status", "median ms",
               "p20 ms", "p80 ms", methods ? fmt::format("  {:<20}  {:>6}", "method", "noise") : std::string());
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
      auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : std::string("-"); };
      fmt::print(out, "  {:>3}  {:<{}}  {:>16}  {:>10}  {:>10}  {:>10}{}\n", i, shown(c.cfg).substr(0, width), width,
                 status, num(c.time[0]), num(c.time[1]), num(c.time[2]), how(c));
      if (c.status != candidate_status::ok && c.status != candidate_status::not_run) {
        auto first_line = c.reason.substr(0, c.reason.find('\n'));
        fmt::print(out, "       {}\n", first_line.substr(0, 160));
      }
    }
    if (unevaluated)
      fmt::print(out, "  ({} of {} candidates not evaluated: the search strategy stopped at its budget)\n", unevaluated,
                 r.candidates.size());
  }

private:
  std::FILE* out_;
  bool summary_, progress_;
  std::size_t done_ = 0;
  std::mutex mutex_;
};

} // namespace cotune
