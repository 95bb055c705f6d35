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
#include <vector>

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
