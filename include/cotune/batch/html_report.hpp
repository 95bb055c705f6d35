#pragma once
/// \file `cotune::batch::html_report`: tuning results as one self-contained HTML page (inline SVG and
/// CSS, no script, nothing fetched): per kernel a heat map of the winners over the problem sizes, per
/// key every candidate's full config beside a bar of its median with its p20-p80 spread (a linear scale
/// that clips, and marks, a far slower outlier), the failures with their compiler's first error line,
/// and the winner. Each key is a `<section class="key">` whose id is a valid fragment name, each
/// candidate a `<tr class="candidate">` whose bar is an SVG `<g class="candidate">`.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
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
#include <cotune/detail/config.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/batch/argument_pack.hpp>
#include <cotune/tune/tuning_phases.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::batch {

/// What a report shows: results, grouped by kernel in the order given.
struct report_input {
  std::string title;
  std::string subtitle{};
  std::vector<tuning_result> results;
};

namespace detail {

[[nodiscard]] COTUNE_DECL std::string html_escape(std::string_view s);

/// The `name=integer` parts of a key text (`M=512, N=256, A: float32` gives M and N).
[[nodiscard]] COTUNE_DECL std::vector<std::pair<std::string, std::int64_t>> key_numbers(std::string_view key);

/// Eight colours told apart by most colour-blind readers (Okabe and Ito), then greys.
[[nodiscard]] COTUNE_DECL std::string_view palette(std::size_t i);

[[nodiscard]] COTUNE_DECL std::string ms_text(double ms);

/// The heat map of one kernel's winners: x = the first numeric key variable, y = the second (or one row).
COTUNE_DECL void heat_map(std::string& out, const std::vector<const tuning_result*>& rs);

/// `n noun` with the noun's plural form where n is not 1 ("1 kernel", "3 keys").
[[nodiscard]] COTUNE_DECL std::string counted(std::size_t n, std::string_view noun);

/// A valid, readable fragment name for `text`: letters, digits, '_' and '-' kept, every other run of
/// characters one '-' (`axpy-y-float32-x-float32-n-1024`); unique among `taken`, which it joins (a
/// second `x` is `x-2`).
[[nodiscard]] COTUNE_DECL std::string fragment_id(std::string_view text, std::set<std::string>& taken);

/// The line of a failure's reason that says what went wrong: the compiler's first error line
/// (`axpy.cpp:3:2: error: #error "UNROLL=3 is not supported"`) where the reason holds a compiler's log,
/// else its first line. The reason's first line of a compile error is the command, which says nothing.
[[nodiscard]] COTUNE_DECL std::string failure_summary(std::string_view reason);

/// Where a key's bars end: a linear scale from zero to the slowest p80, unless one candidate is far
/// slower than the rest. Then the scale stops at `outlier_factor` times the median of the candidates'
/// medians and the slower bars are drawn to the edge and marked clipped, so that the others stay
/// readable. 4: a candidate 4 times slower than the typical one is out of the race, and 4 keeps the
/// typical bars at a quarter of the width or more.
struct bar_scale {
  static constexpr double outlier_factor = 4;
  double top_ms = 1;
  bool clips = false;

  [[nodiscard]] static bar_scale of(const tuning_result& r);
  [[nodiscard]] bool clipped(double ms) const { return clips && ms > top_ms; }
  /// The pixel offset of `ms` on a bar `width` pixels wide.
  [[nodiscard]] int at(double ms, int width) const {
    return static_cast<int>(width * std::clamp(ms / top_ms, 0.0, 1.0));
  }
};

/// Where tunings' wall time went (tune/tuning_phases.hpp), as a `<table class="phases">`: a row per
/// phase (compile, load, verify, measure, idle) with its share of the wall time and its busy time summed
/// over the threads that ran it, then the lower bound (compiles over every compile thread, or
/// measurements back to back on every device) against the wall time.
COTUNE_DECL void phase_table(std::string& out, const tuning_phases& p, std::string_view caption);

/// The phases of several tunings added up (their wall times add too: tunings one after another).
[[nodiscard]] COTUNE_DECL tuning_phases summed_phases(const std::vector<tuning_result>& rs);

/// One key: a row per candidate (its full config, a bar of its median with a p20-p80 whisker, its
/// time), then the failures, each summarised by its compiler's first error line.
COTUNE_DECL void key_section(std::string& out, const tuning_result& r, std::set<std::string>& ids);

/// A page's head and the report's style sheet, `extra_css` appended, up to the opened `<body>`.
COTUNE_DECL void page_start(std::string& out, std::string_view title, std::string_view extra_css = {});

} // namespace detail

/// The page. Deterministic for given results (no clock is read).
[[nodiscard]] COTUNE_DECL std::string html_report(const report_input& in);

/// Writes `html_report(in)` to `file` atomically (a reader never sees half a page); throws
/// std::system_error naming the file when it cannot.
COTUNE_DECL void write_html_report(const std::filesystem::path& file, const report_input& in);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/html_report.ipp>
#endif
