// The HTML report's page, from results made here: bar scale and clipping, failure summaries, fragment
// ids, plural forms, configs as their backend sees them. How a browser draws the page (no label
// clipped): tests/tools/test_report_command.cpp, in headless Chromium.
#include <catch2/catch.hpp>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/batch/html_report.hpp>

namespace cj = cotune::batch;

namespace {

/// A host result over UNROLL = 1, 2, 4, 8 with the given medians (p20 and p80 10% either side); a
/// negative median is a candidate that did not compile, with a compiler log as its reason.
cotune::tuning_result host_result(const std::string& key, const std::vector<double>& medians) {
  cotune::tuning_result r;
  r.kernel = "axpy";
  r.key_text = "instance: " + key;
  r.launch_options = false;
  int unroll = 1;
  for (double ms : medians) {
    cotune::candidate_result c{cotune::config{{"UNROLL", unroll}}};
    unroll *= 2;
    if (ms < 0) {
      c.status = cotune::candidate_status::compile_error;
      c.reason = "host backend: kernel 'axpy' with config {UNROLL=8} does not compile (exit 1); command: g++ -O2 "
                 "-shared -DUNROLL=8 axpy.cpp\naxpy.cpp: In function 'void axpy()':\n"
                 "axpy.cpp:3:2: error: #error \"UNROLL=8 is not supported\"\n"
                 "axpy.cpp:9:1: error: expected ';' before '}' token\n";
    } else {
      c.status = cotune::candidate_status::ok;
      c.time = cotune::timings{ms, ms * 0.9, ms * 1.1};
    }
    r.candidates.push_back(c);
  }
  r.winner = 0;
  r.made = cotune::provenance{"node1", "host (test cpu)", "2026-12-04T00:00:00Z", "0.1.0"};
  return r;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// The width of the bar of the candidate whose label is `label`.
int bar_width(const std::string& page, const std::string& label) {
  const auto row = page.find("<td class=\"label\">" + label + "</td>");
  REQUIRE(row != std::string::npos);
  const auto rect = page.find("<rect x=\"0\" y=\"2\" width=\"", row);
  REQUIRE(rect != std::string::npos);
  return std::stoi(page.substr(rect + 25));
}

} // namespace

TEST_CASE("a far slower candidate is clipped and marked, and the other bars keep the width", "[job][html_report]") {
  const auto page = cj::html_report({"axpy", "", {host_result("n=1024", {1.0, 1.5, 2.0, 500.0})}});
  // The scale stops at 4 times the median of the medians (2.0 ms): 8 ms.
  CHECK_THAT(page, Catch::Contains("linear scale, 0 to 8.000 ms; bars marked &#187; are clipped"));
  CHECK(count(page, "<tr class=\"candidate clipped\">") == 1);
  CHECK_THAT(page, Catch::Contains("&#187; 500.0 ms"));
  CHECK(bar_width(page, "UNROLL: 8") == 400);
  CHECK(bar_width(page, "UNROLL: 1") == 50); // 400 * 1/8, not 400 * 1/550 as on a scale to the outlier
  CHECK(bar_width(page, "UNROLL: 4") == 100);

  const auto even = cj::html_report({"axpy", "", {host_result("n=1024", {1.0, 1.5, 2.0, 3.0})}});
  CHECK(count(even, "clipped") == 0);
  CHECK_THAT(even, Catch::Contains("linear scale, 0 to 3.300 ms</caption>")); // the slowest p80
  CHECK(bar_width(even, "UNROLL: 8") == 363);
}

TEST_CASE("a failure is summarised by its compiler's first error line, not by the command", "[job][html_report]") {
  const auto page = cj::html_report({"axpy", "", {host_result("n=1024", {1.0, -1})}});
  CHECK_THAT(page, Catch::Contains("<summary>axpy.cpp:3:2: error: #error &quot;UNROLL=8 is not supported&quot;</summary>"));
  CHECK_THAT(page, Catch::Contains("<pre>host backend: kernel &#39;axpy&#39; with config {UNROLL=8} does not compile"));
  CHECK(cj::detail::failure_summary("the benchmark ran past 100 ms\nlast sample 120 ms") ==
        "the benchmark ran past 100 ms");
  CHECK(cj::detail::failure_summary("nvrtc: does not compile\nkernel.cu(3): error: identifier \"x\" is undefined") ==
        "kernel.cu(3): error: identifier \"x\" is undefined");
}

TEST_CASE("section ids are valid fragment names, unique on the page", "[job][html_report]") {
  std::set<std::string> taken;
  CHECK(cj::detail::fragment_id("axpy-y: float32, x: float32, n=1024", taken) == "axpy-y-float32-x-float32-n-1024");
  CHECK(cj::detail::fragment_id("axpy-y: float32; x: float32, n=1024", taken) == "axpy-y-float32-x-float32-n-1024-2");
  CHECK(cj::detail::fragment_id("2d stencil", taken) == "k-2d-stencil");
  CHECK(cj::detail::fragment_id(": :", taken) == "key");

  const auto page = cj::html_report(
      {"axpy", "", {host_result("y: float32, n=1024", {1.0}), host_result("y: float32, n=4096", {1.0})}});
  std::set<std::string> ids;
  for (auto at = page.find(" id=\""); at != std::string::npos; at = page.find(" id=\"", at + 1)) {
    const auto id = page.substr(at + 5, page.find('"', at + 5) - at - 5);
    INFO(id);
    CHECK(id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos);
    CHECK(ids.insert(id).second);
  }
  CHECK_THAT(page, Catch::Contains("<a href=\"#axpy-y-float32-n-4096\">"));
  CHECK(ids == std::set<std::string>{"axpy", "axpy-y-float32-n-1024", "axpy-y-float32-n-4096"});
}

TEST_CASE("counts read in the right number", "[job][html_report]") {
  const auto one = cj::html_report({"axpy", "", {host_result("n=1024", {1.0})}});
  CHECK_THAT(one, Catch::Contains("1 key of 1 kernel<") && Catch::Contains("axpy (1 key)</h2>"));
  const auto two = cj::html_report({"axpy", "", {host_result("n=1024", {1.0}), host_result("n=4096", {1.0})}});
  CHECK_THAT(two, Catch::Contains("2 keys of 1 kernel<") && Catch::Contains("axpy (2 keys)</h2>"));
  CHECK(cj::detail::counted(0, "kernel") == "0 kernels");
}

TEST_CASE("a host config is shown without GPU launch options, a GPU config with them", "[job][html_report]") {
  auto r = host_result("n=1024", {1.0, 2.0});
  const auto host = cj::html_report({"axpy", "", {r}});
  CHECK_THAT(host, Catch::Contains("<td class=\"label\">UNROLL: 1</td>") && Catch::Contains("<b>UNROLL: 1</b>"));
  CHECK(count(host, "num_warps") == 0);
  r.launch_options = true;
  const auto gpu = cj::html_report({"axpy", "", {r}});
  CHECK_THAT(gpu, Catch::Contains("<td class=\"label\">" + r.candidates[0].cfg.text() + "</td>"));
  CHECK(count(gpu, "num_warps") > 0);
}

TEST_CASE("the report shows where each tuning's time went, and the totals over its keys", "[job][html_report][trace]") {
  auto a = host_result("n=1024", {1.0, 2.0});
  a.phases.wall = {.compile = 1500, .load = 20, .verify = 30, .measure = 390};
  a.phases.idle_ms = 60;
  a.phases.busy = {.compile = 5800, .load = 20, .verify = 30, .measure = 390};
  a.phases.compile_threads = 4;
  a.phases.devices = 1;
  auto b = a;
  b.key_text = "instance: n=4096";
  const auto page = cj::html_report({.title = "phases", .results = {a, b, host_result("n=8192", {1.0})}});
  // Two keys with phases, one without (a result stored before they were recorded): no table there.
  CHECK(count(page, "<table class=\"phases\">") == 3); // each key's, and the totals
  CHECK(count(page, "data-phase=\"compile\"") == 3);
  CHECK_THAT(page, Catch::Contains("<td>compile</td><td class=\"value\">1500.0 ms</td><td class=\"value\">75%</td>"
                                   "<td class=\"value\">5800.0 ms</td>"));
  CHECK_THAT(page, Catch::Contains("<td>idle</td><td class=\"value\">60.000 ms</td><td class=\"value\">3%</td>"
                                   "<td class=\"value\">-</td>"));
  // The bound: 5.8 s of compiles over 4 threads (1.45 s) against 2 s of wall time.
  CHECK_THAT(page, Catch::Contains("wall 2000.0 ms against the lower bound 1450.0 ms (compiles over 4 threads, or "
                                   "measurements over 1 device): 1.38x"));
  // The totals add the keys up.
  CHECK_THAT(page, Catch::Contains("<td>compile</td><td class=\"value\">3000.0 ms</td><td class=\"value\">75%</td>"));
  CHECK(page.find("where the tunings&#39; time went") < page.find("<section class=\"key\""));
  // One key alone: its own table, no totals.
  CHECK(count(cj::html_report({.title = "one", .results = {a}}), "<table class=\"phases\">") == 1);
}
