// `cotune report`, run as a real process on a real job (a real compiler builds each candidate; the host
// backend measures it), drawn by a real headless Chromium: a script added to a copy of the page
// measures every label in the laid-out page and writes what it found into the DOM, which
// `--dump-dom` prints. A label that a box cuts off, at either end, fails the test.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <cotune/detail/files.hpp>
#include <cotune/detail/process.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

std::string chromium_path() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(p)) return p;
  return {};
}

/// Marks every label, axis text and value that is cut off: out of the page at the left or top, wider
/// than its own box, or reaching past a box that clips it (an `<svg>`, or an element whose overflow is
/// not visible). Then writes `measured N clipped M` and one line per clipped text into `<pre id="measured">`.
constexpr const char* measure_script = R"(<script>
(function () {
  function clipped(el) {
    const r = el.getBoundingClientRect();
    if (r.left < -0.5 || r.top < -0.5) return 'off the page';
    if (el instanceof HTMLElement && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
      return 'wider than its box (' + el.scrollWidth + ' > ' + el.clientWidth + ')';
    for (let a = el.parentElement; a; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (!(a instanceof SVGSVGElement) && style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const b = a.getBoundingClientRect();
      if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5)
        return 'cut off by its ' + a.tagName + ' (' + Math.round(r.left) + '..' + Math.round(r.right) + ' in ' +
               Math.round(b.left) + '..' + Math.round(b.right) + ')';
    }
    return '';
  }
  const lines = [];
  let n = 0;
  document.querySelectorAll('.label, .axis, .value').forEach(function (el) {
    ++n;
    const why = clipped(el);
    if (why) lines.push(why + ': ' + el.textContent);
  });
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = 'measured ' + n + ' clipped ' + lines.length + '\n' + lines.join('\n') + '\nend of measurement';
  document.body.appendChild(pre);
})();
</script>
)";

/// How often `needle` occurs in `text`.
std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

} // namespace

TEST_CASE("cotune report draws every config label whole in headless Chromium", "[tools][report][browser]") {
  const std::string chromium = chromium_path();
  if (chromium.empty()) {
    WARN("chromium is not installed (scripts/install-deps installs Debian's chromium): the page was not rendered");
    return;
  }
  cotune_test::temp_dir root{"cotune-report"};
  // Long parameter names, so that a config's label is wider than a bar's label column: the report must
  // wrap it, never cut it. UNROLL=3 does not compile, for the failures' summaries.
  std::ofstream(root / "axpy.cpp") << R"(
#if UNROLL == 3
#error "UNROLL=3 is not supported"
#endif
extern "C" void axpy(float* y, const float* x, float a, int n) {
  for (int i = 0; i < n; i += UNROLL)
    for (int u = 0; u < UNROLL && i + u < n; ++u) y[i + u] += a * x[i + u] * ACCUMULATOR_COUNT;
}
)";
  const fs::path job = root / "axpy.job.json";
  std::ofstream(job) << R"({
  "name": "axpy-long-labels",
  "bench": {"warmup_ms": 1, "rep_ms": 2},
  "kernels": [
    {
      "name": "axpy",
      "source": "axpy.cpp",
      "space": {"axes": {"ACCUMULATOR_COUNT": [1], "PREFETCH_DISTANCE_BYTES": [0, 64], "UNROLL": [1, 3],
                         "VECTOR_WIDTH_HINT": [8]}},
      "arguments": [
        {"name": "y", "buffer": "float32", "extent": "n", "reset": true},
        {"name": "x", "buffer": "float32", "extent": "n", "fill": "random", "seed": 7},
        {"name": "a", "scalar": "float32", "value": 2.0},
        {"name": "n", "scalar": "int32", "value": "n"}
      ],
      "key": ["n"],
      "instances": [{"n": 1024}, {"n": 4096}]
    }
  ]
}
)";
  const fs::path page = root / "report.html";
  auto r = cotune::detail::run_process(
      {COTUNE_TOOL, "report", job.string(), "-o", page.string()}, std::chrono::seconds(120), {},
      {"COTUNE_CACHE_DIR=" + (root / "cache").string(), "COTUNE_BENCH_SCREEN_REP_MS=0", "COTUNE_REDIS_URL="});
  INFO("cotune output:\n" << r.output);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("(2 keys)"));

  std::string html = *cotune::detail::read_file(page);
  REQUIRE(html.find("</body>") != std::string::npos);
  html.insert(html.find("</body>"), measure_script);
  const fs::path measured_page = root / "measured.html";
  std::ofstream(measured_page) << html;
  auto dom = cotune::detail::run_process(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
       "--user-data-dir=" + (root / "chromium").string(), "--window-size=1000,800", "--dump-dom",
       "file://" + measured_page.string()},
      std::chrono::seconds(90), {}, {"HOME=" + root.string()});
  REQUIRE_FALSE(dom.timed_out);
  REQUIRE(dom.exit_code == 0);
  const auto at = dom.output.find("<pre id=\"measured\">");
  INFO("chromium output:\n" << dom.output);
  REQUIRE(at != std::string::npos); // the script ran
  const auto measured = dom.output.substr(at + 19, dom.output.find("end of measurement", at) - at - 19);
  INFO("measurement:\n" << measured);
  // 8 candidates' labels and values, the heat map's axes.
  CHECK_THAT(measured, Catch::StartsWith("measured ") && !Catch::Contains("measured 0 "));
  CHECK_THAT(measured, Catch::Contains(" clipped 0\n"));
  // Each label whole, as the host backend sees the config (no GPU launch options), twice (2 keys).
  for (const char* label : {"ACCUMULATOR_COUNT: 1, PREFETCH_DISTANCE_BYTES: 0, UNROLL: 1, VECTOR_WIDTH_HINT: 8",
                            "ACCUMULATOR_COUNT: 1, PREFETCH_DISTANCE_BYTES: 64, UNROLL: 1, VECTOR_WIDTH_HINT: 8",
                            "ACCUMULATOR_COUNT: 1, PREFETCH_DISTANCE_BYTES: 64, UNROLL: 3, VECTOR_WIDTH_HINT: 8"}) {
    INFO(label);
    CHECK_THAT(dom.output, Catch::Contains(std::string("<td class=\"label\">") + label + "</td>"));
  }
  CHECK_THAT(dom.output, !Catch::Contains("num_warps"));
  // A failure reads as the compiler's error, not as the command that ran it.
  CHECK_THAT(dom.output, Catch::Contains("error: #error \"UNROLL=3 is not supported\"</summary>"));
  CHECK_THAT(dom.output, Catch::Contains("<section class=\"key\" id=\"axpy-y-float32-x-float32-n-1024\">"));
  CHECK_THAT(dom.output, Catch::Contains("2 keys of 1 kernel<"));
  // Where each key's tuning time went (its stored phases), and the two keys' totals above them.
  CHECK(count_of(dom.output, "<table class=\"phases\">") == 3);
  for (const char* phase : {"compile", "load", "verify", "measure", "idle"})
    CHECK(count_of(dom.output, std::string("data-phase=\"") + phase + "\"") == 3);
  CHECK_THAT(dom.output, Catch::Contains("against the lower bound"));

  // A database of the winners alone: its host configs are shown without launch options too.
  const fs::path db = root / "axpy.db.json", db_page = root / "db.html";
  const std::vector<std::string> env{"COTUNE_CACHE_DIR=" + (root / "cache").string(), "COTUNE_REDIS_URL="};
  auto exported = cotune::detail::run_process(
      {COTUNE_TOOL, "db", "export", "--job", job.string(), "-o", db.string(), "--winners-only"},
      std::chrono::seconds(120), {}, env);
  INFO("cotune db export output:\n" << exported.output);
  REQUIRE(exported.exit_code == 0);
  auto db_report =
      cotune::detail::run_process({COTUNE_TOOL, "report", db.string(), "-o", db_page.string()}, std::chrono::seconds(60), {}, env);
  INFO("cotune report output:\n" << db_report.output);
  REQUIRE(db_report.exit_code == 0);
  const std::string db_html = *cotune::detail::read_file(db_page);
  CHECK_THAT(db_html, Catch::Contains("<td class=\"label\">ACCUMULATOR_COUNT: 1, PREFETCH_DISTANCE_BYTES: ") &&
                          !Catch::Contains("num_warps"));
}

TEST_CASE("db predict --held-out --html shows tuned winners beside predictions over a grid of sizes, every label "
          "whole in headless Chromium",
          "[tools][report][prediction][browser]") {
  const std::string chromium = chromium_path();
  cotune_test::temp_dir root{"cotune-predict-page"};
  // A 3 x 2 grid of sizes (cols x rows) of a real kernel, tuned for real by the host backend; long
  // parameter names, so that a config's label is wider than a table's column.
  std::ofstream(root / "scale.cpp") << R"(
extern "C" void scale2d(float* y, const float* x, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; c += UNROLL_FACTOR_OF_THE_INNER_LOOP)
      for (int u = 0; u < UNROLL_FACTOR_OF_THE_INNER_LOOP && c + u < cols; ++u)
        y[r * cols + c + u] = 2.0f * x[r * cols + c + u] + PREFETCH_DISTANCE_IN_BYTES * 0.0f;
}
)";
  const fs::path job = root / "scale.job.json";
  std::ofstream(job) << R"({
  "name": "scale-grid",
  "bench": {"warmup_ms": 1, "rep_ms": 2},
  "kernels": [
    {
      "name": "scale2d",
      "source": "scale.cpp",
      "space": {"axes": {"UNROLL_FACTOR_OF_THE_INNER_LOOP": [1, 8], "PREFETCH_DISTANCE_IN_BYTES": [0, 256]}},
      "arguments": [
        {"name": "y", "buffer": "float32", "extent": "rows * cols", "reset": true},
        {"name": "x", "buffer": "float32", "extent": "rows * cols", "fill": "random", "seed": 7},
        {"name": "rows", "scalar": "int32", "value": "rows"},
        {"name": "cols", "scalar": "int32", "value": "cols"}
      ],
      "key": ["rows", "cols"],
      "instances": [{"rows": 16, "cols": 256}, {"rows": 16, "cols": 1024}, {"rows": 16, "cols": 4096},
                    {"rows": 64, "cols": 256}, {"rows": 64, "cols": 1024}, {"rows": 64, "cols": 4096}]
    }
  ]
}
)";
  const std::vector<std::string> env{"COTUNE_CACHE_DIR=" + (root / "cache").string(), "COTUNE_REDIS_URL=",
                                     "COTUNE_BENCH_SCREEN_REP_MS=0", "COTUNE_TUNING_DB_SECRET="};
  const auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), COTUNE_TOOL);
    auto r = cotune::detail::run_process(args, std::chrono::seconds(120), {}, env);
    INFO("cotune output:\n" << r.output);
    REQUIRE_FALSE(r.timed_out);
    return r;
  };
  const fs::path full = root / "full.db.json", winners = root / "winners.db.json";
  REQUIRE(cli({"db", "export", "--job", job.string(), "-o", full.string()}).exit_code == 0);
  REQUIRE(cli({"db", "export", "--job", job.string(), "-o", winners.string(), "--winners-only"}).exit_code == 0);
  CHECK(cli({"db", "predict", full.string(), "--html", (root / "x.html").string()}).exit_code != 0); // needs --held-out
  CHECK_THAT(cli({"db", "predict", "--help"}).output, Catch::Contains("--html"));

  /// The page of `db` as Chromium laid it out, with the measurement of every label appended.
  const auto rendered = [&](const fs::path& db, const std::string& name) {
    const fs::path page = root / (name + ".html");
    auto r = cli({"db", "predict", db.string(), "--held-out", "--html", page.string()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("wrote " + page.string() + " (6 keys of 6 predicted)"));
    std::string html = *cotune::detail::read_file(page);
    REQUIRE(html.find("</body>") != std::string::npos);
    html.insert(html.find("</body>"), measure_script);
    const fs::path measured_page = root / (name + ".measured.html");
    std::ofstream(measured_page) << html;
    auto dom = cotune::detail::run_process(
        {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--user-data-dir=" + (root / "chromium").string(), "--window-size=1000,800", "--dump-dom",
         "file://" + measured_page.string()},
        std::chrono::seconds(90), {}, {"HOME=" + root.string()});
    REQUIRE_FALSE(dom.timed_out);
    REQUIRE(dom.exit_code == 0);
    return std::pair(r.output, dom.output);
  };
  if (chromium.empty()) {
    WARN("chromium is not installed (scripts/install-deps installs Debian's chromium): the page was not rendered");
    return;
  }
  const auto check_page = [&](const std::string& dom) {
    const auto at = dom.find("<pre id=\"measured\">");
    INFO("chromium output:\n" << dom);
    REQUIRE(at != std::string::npos); // the script ran
    const auto measured = dom.substr(at + 19, dom.find("end of measurement", at) - at - 19);
    INFO("measurement:\n" << measured);
    CHECK_THAT(measured, Catch::StartsWith("measured ") && !Catch::Contains("measured 0 "));
    CHECK_THAT(measured, Catch::Contains(" clipped 0\n"));
    // A grid cell and a table row per key, each reachable by a valid fragment name.
    CHECK(count_of(dom, "<td class=\"cell ") == 6);
    CHECK(count_of(dom, "<td class=\"empty\">") == 0);
    CHECK(count_of(dom, "<tr class=\"key ") == 6);
    for (int rows : {16, 64})
      for (int cols : {256, 1024, 4096}) {
        const auto id = fmt::format("scale2d-y-float32-x-float32-rows-{}-cols-{}", rows, cols);
        INFO(id);
        CHECK_THAT(dom, Catch::Contains("id=\"" + id + "\"") && Catch::Contains("href=\"#" + id + "\""));
      }
    // The grid's axes: cols across, rows down.
    for (const char* axis : {">rows<", ">16<", ">64<", ">cols=256<", ">cols=1024<", ">cols=4096<"}) {
      INFO(axis);
      CHECK(count_of(dom, "<span class=\"axis\">" + std::string(axis).substr(1)) == 1);
    }
    CHECK_THAT(dom, Catch::Contains("1 kernel: each key") && Catch::Contains("6 keys of 1 kernel"));
    CHECK_THAT(dom, Catch::Contains("6 keys predicted from the others"));
    CHECK_THAT(dom, !Catch::Contains("num_warps")); // host configs without GPU launch options
    // Each config of the legend whole, as the host backend sees it.
    CHECK_THAT(dom, Catch::Contains("PREFETCH_DISTANCE_IN_BYTES: ") &&
                        Catch::Contains(", UNROLL_FACTOR_OF_THE_INNER_LOOP: "));
  };

  // With every candidate's time: each prediction's regret is measured.
  const auto [full_text, full_dom] = rendered(full, "full");
  check_page(full_dom);
  CHECK_THAT(full_dom, Catch::Contains("regret measured for 6: mean ") && Catch::Contains(" within 2% of the tuned winner"));
  CHECK(count_of(full_dom, "not measured</") == 0);
  CHECK_THAT(full_text, Catch::Contains("6 keys with a known regret"));

  // Winners only: a prediction other than the key's own winner has no time there, and says so.
  const auto [winners_text, winners_dom] = rendered(winners, "winners");
  check_page(winners_dom);
  const auto unknown = count_of(winners_text, ": regret -\n");
  CHECK(count_of(winners_dom, "<span class=\"value\">not measured</span>") == unknown);
  CHECK(count_of(winners_dom, "<tr class=\"key unknown\"") == unknown);
}
