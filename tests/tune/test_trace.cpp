// COTUNE_TRACE end to end: real host tunings write a Chrome trace, read back with the project's JSON
// reader (simdjson); the phases of the summary line and of the stored result.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <cotune/cotune.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/tune/trace.hpp>

#include "tuning_fixture.hpp"

using namespace cotune;
using cotune_test::cost_configs;
using cotune_test::private_cache;
using cotune_test::work_kernel;

namespace {

using work_tuner = autotuner<void(int*, int)>;

/// One complete event of a trace.
struct span_event {
  std::string name, cat;
  double ts = -1, dur = -1;
  std::int64_t pid = -1, tid = -1;
  std::int64_t candidate = -1, tuning = -1;
  std::string kernel;
};

/// A trace file as read back: its complete events and the names its metadata gives.
struct trace_file {
  std::vector<span_event> spans;
  std::map<std::int64_t, std::string> processes;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> threads;
};

trace_file read_trace(const std::filesystem::path& p) {
  const auto text = detail::read_file(p);
  REQUIRE(text);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  REQUIRE(parser.parse(*text).get(root) == simdjson::SUCCESS);
  simdjson::dom::array events;
  REQUIRE(root["traceEvents"].get_array().get(events) == simdjson::SUCCESS);
  trace_file out;
  for (auto e : events) {
    std::string_view ph, name;
    REQUIRE(e["ph"].get_string().get(ph) == simdjson::SUCCESS);
    REQUIRE(e["name"].get_string().get(name) == simdjson::SUCCESS);
    std::int64_t pid = -1, tid = -1;
    REQUIRE(e["pid"].get_int64().get(pid) == simdjson::SUCCESS);
    REQUIRE(e["tid"].get_int64().get(tid) == simdjson::SUCCESS);
    if (ph == "M") {
      std::string_view value;
      if (e["args"]["name"].get_string().get(value) != simdjson::SUCCESS) continue; // a sort index
      if (name == "process_name") out.processes[pid] = value;
      if (name == "thread_name") out.threads[{pid, tid}] = value;
      continue;
    }
    REQUIRE(ph == "X");
    span_event s;
    s.name = name;
    s.pid = pid;
    s.tid = tid;
    std::string_view cat, kernel;
    REQUIRE(e["cat"].get_string().get(cat) == simdjson::SUCCESS);
    s.cat = cat;
    REQUIRE(e["ts"].get_double().get(s.ts) == simdjson::SUCCESS);
    REQUIRE(e["dur"].get_double().get(s.dur) == simdjson::SUCCESS);
    if (e["args"]["candidate"].get_int64().get(s.candidate) != simdjson::SUCCESS) s.candidate = -1;
    if (e["args"]["tuning"].get_int64().get(s.tuning) != simdjson::SUCCESS) s.tuning = tid; // a tuning's own span
    if (e["args"]["kernel"].get_string().get(kernel) == simdjson::SUCCESS) s.kernel = kernel;
    out.spans.push_back(std::move(s));
  }
  return out;
}

/// Checks what every trace must hold: sane times, named processes and threads, and for every tuning
/// a span of its own that holds its candidates' spans, each candidate compiled and measured.
void check_schema(const trace_file& t, std::size_t tunings, std::size_t candidates) {
  REQUIRE(!t.spans.empty());
  std::map<std::int64_t, std::pair<double, double>> tuning_bounds;
  for (const auto& s : t.spans) {
    INFO(s.name << " pid " << s.pid << " tid " << s.tid);
    CHECK(std::isfinite(s.ts));
    CHECK(std::isfinite(s.dur));
    CHECK(s.ts >= 0);
    CHECK(s.dur >= 0);
    CHECK(s.ts < 3600e6); // microseconds within the hour the test runs in (a unit slip shows)
    CHECK(t.processes.count(s.pid) == 1);
    CHECK(t.threads.count({s.pid, s.tid}) == 1);
    if (s.cat == "tuning") tuning_bounds[s.tid] = {s.ts, s.ts + s.dur};
  }
  REQUIRE(tuning_bounds.size() == tunings);
  std::map<std::pair<std::int64_t, std::int64_t>, std::set<std::string>> phases; // (tuning, candidate) -> cats
  for (const auto& s : t.spans) {
    if (s.cat == "tuning") continue;
    INFO(s.name);
    REQUIRE(tuning_bounds.count(s.tuning) == 1);
    const auto [from, to] = tuning_bounds[s.tuning];
    CHECK(s.ts >= from - 1); // a microsecond of rounding
    CHECK(s.ts + s.dur <= to + 1);
    if (s.candidate >= 0) phases[{s.tuning, s.candidate}].insert(s.cat);
  }
  for (const auto& [tuning, bounds] : tuning_bounds)
    for (std::size_t i = 0; i < candidates; ++i) {
      INFO("tuning " << tuning << " candidate " << i);
      const std::pair<std::int64_t, std::int64_t> which{tuning, static_cast<std::int64_t>(i)};
      const auto& cats = phases[which];
      CHECK(cats.count("compile") == 1);
      CHECK((cats.count("screen") + cats.count("measure") + cats.count("final")) >= 1);
    }
}

} // namespace

TEST_CASE("COTUNE_TRACE writes a Chrome trace of a tuning: every candidate compiled, loaded, verified and measured",
          "[tune][trace]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-trace");
  const auto file = dir.path() / "tuning.json";
  auto trace = knobs().autotuning.trace.scoped(std::optional<std::string>(file.string()));
  // In this process (no isolated copy), so that verification and loads run on the device thread and are
  // seen; a screening pass (2 ms of a 5 ms budget) and finals.
  auto isolate = knobs().autotuning.isolate.scoped("off");
  auto screen = knobs().bench.screen_rep_ms.scoped(2.0);
  auto margin = knobs().bench.screen_margin.scoped(100.0); // every candidate a finalist: finals for sure
  work_tuner tuner{work_kernel("traced_work"), cost_configs({1, 2, 3}),
                   {.arg_names = {"out", "n"},
                    .key = {"n"},
                    .bench = bench_options{.warmup_ms = 1.0, .rep_ms = 5.0},
                    .verify = [](const config&, int* const& out, const int&) -> std::optional<std::string> {
                      return out[0] == 0 ? std::optional<std::string>("nothing written") : std::nullopt;
                    }}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 2000);
  REQUIRE(std::filesystem::exists(file));
  const trace_file t = read_trace(file);
  check_schema(t, 1, 3);
  std::set<std::string> cats;
  for (const auto& s : t.spans) cats.insert(s.cat);
  CHECK(cats == std::set<std::string>{"compile", "final", "load", "screen", "tuning", "verify"});
  // The tracks: the tunings, the compile pool's threads, the host device's thread.
  std::set<std::string> processes;
  for (const auto& [pid, name] : t.processes) processes.insert(name.substr(0, name.find(' ')));
  CHECK(processes == std::set<std::string>{"compile", "cotune", "device"});
  for (const auto& s : t.spans)
    if (s.cat != "tuning") CHECK(s.kernel == "traced_work");

  // The result's phases split its wall time, and the busy times hold what the spans hold.
  CHECK(r.phases.known());
  CHECK(r.phases.wall.total() + r.phases.idle_ms == Approx(r.wall_ms).epsilon(0.01));
  CHECK(r.phases.busy.compile > 0);
  CHECK(r.phases.busy.measure > 0);
  CHECK(r.phases.busy.verify > 0);
  CHECK(r.phases.devices == 1);
  CHECK(r.phases.compile_threads == engine::shared().compile_threads());
  CHECK(r.phases.lower_bound_ms() > 0);
  CHECK(r.phases.lower_bound_ms() <= r.wall_ms);
  // ... and travel with the stored result.
  const auto back = tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK(back->phases.wall.compile == r.phases.wall.compile);
  CHECK(back->phases.idle_ms == r.phases.idle_ms);
  CHECK(back->phases.busy.verify == r.phases.busy.verify);
  CHECK(back->phases.compile_threads == r.phases.compile_threads);
}

TEST_CASE("concurrent tunings in one process append to one trace, which stays one complete document",
          "[tune][trace]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-trace");
  const auto file = dir.path() / "trace-%p.json";
  auto trace = knobs().autotuning.trace.scoped(std::optional<std::string>(file.string()));
  // Isolated (the default): each candidate's measurement runs in the tuning's forked copy, on a track of its own.
  work_tuner a{work_kernel("traced_a"), cost_configs({1, 2}),
               {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}};
  work_tuner b{work_kernel("traced_b"), cost_configs({2, 1, 3}),
               {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}};
  int out_a = 0, out_b = 0;
  std::thread other([&] { a.tune_now(&out_a, 500); });
  b.tune_now(&out_b, 700);
  a.tune_now(&out_a, 600); // a third tuning, after the first two
  other.join();
  const auto written = dir.path() / ("trace-" + std::to_string(::getpid()) + ".json");
  REQUIRE(std::filesystem::exists(written));
  const trace_file t = read_trace(written);
  check_schema(t, 3, 2);
  std::set<std::string> kernels;
  for (const auto& s : t.spans) kernels.insert(s.kernel);
  CHECK(kernels == std::set<std::string>{"traced_a", "traced_b"});
}

TEST_CASE("the summary line says where the tuning's time went", "[tune][trace][events]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-trace");
  const auto log = dir.path() / "summary.txt";
  std::FILE* f = std::fopen(log.string().c_str(), "w");
  REQUIRE(f);
  auto printer = std::make_shared<printing_observer>(f, true, false);
  work_tuner tuner{work_kernel("summarised_work"), cost_configs({1, 2}),
                   {.arg_names = {"out", "n"},
                    .key = {"n"},
                    .bench = cotune_test::quick_bench(),
                    .observers = {printer}}};
  int out = 0;
  const auto& r = tuner.tune_now(&out, 500);
  std::fclose(f);
  const auto text = detail::read_file(log);
  REQUIRE(text);
  // "finished after 0.41s: compile 0.3 s, measure 0.1 s, idle 0.0 s,"
  INFO(*text);
  CHECK_THAT(*text, Catch::Contains("finished after") && Catch::Contains(": " + r.phases.text() + ",\n"));
  CHECK_THAT(r.phases.text(), Catch::Contains("idle "));
  CHECK_THAT(r.phases.text(), Catch::Matches("(compile|load|verify|measure|idle) [0-9]+\\.[0-9] s(, (compile|load|verify|measure|idle) [0-9]+\\.[0-9] s)*"));
}

TEST_CASE("phases: the wall split ranks measurement over verification over loading over compiling",
          "[tune][trace]") {
  using clock = tuning_timeline::clock;
  using std::chrono::milliseconds;
  const auto t0 = clock::now();
  tuning_timeline t;
  // Two compile threads 0-400 and 100-500 ms, a load 500-560, a measurement 560-960 holding a verification
  // 560-620; nothing 960-1000.
  t.add({0, trace_phase::compile, t0, t0 + milliseconds(400), "compile pool", 1});
  t.add({1, trace_phase::compile, t0 + milliseconds(100), t0 + milliseconds(500), "compile pool", 2});
  t.add({0, trace_phase::load, t0 + milliseconds(500), t0 + milliseconds(560), "host#0", 3});
  t.add({0, trace_phase::screen, t0 + milliseconds(560), t0 + milliseconds(960), "host#0", 3});
  t.add({0, trace_phase::verify, t0 + milliseconds(560), t0 + milliseconds(620), "host#0", 3});
  const tuning_phases p = t.close(t0, t0 + milliseconds(1000), 2);
  CHECK(p.wall.compile == Approx(500));
  CHECK(p.wall.load == Approx(60));
  CHECK(p.wall.verify == Approx(60));
  CHECK(p.wall.measure == Approx(340));
  CHECK(p.idle_ms == Approx(40));
  CHECK(p.busy.compile == Approx(800));
  CHECK(p.busy.measure == Approx(340)); // the verification inside it is not measuring
  CHECK(p.devices == 1);
  CHECK(p.lower_bound_ms() == Approx(400)); // 800 ms of compiles over 2 threads > 340 ms of measuring
  CHECK(p.text() == "compile 0.5 s, measure 0.3 s, load 0.1 s, verify 0.1 s, idle 0.0 s");
}

TEST_CASE("a trace file that cannot be written is a warning, and the tuning goes on", "[tune][trace]") {
  private_cache cache;
  auto trace = knobs().autotuning.trace.scoped(std::optional<std::string>("/nonexistent-dir/trace.json"));
  struct warnings final : observer {
    std::vector<std::string> seen;
    void on_event(const tuning_event& e) override {
      if (const auto* w = std::get_if<tuning_warning>(&e)) seen.push_back(w->message);
    }
  };
  auto seen = std::make_shared<warnings>();
  work_tuner tuner{work_kernel("untraced_work"), cost_configs({1, 2}),
                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench(), .observers = {seen}}};
  int out = 0;
  CHECK(tuner.tune_now(&out, 100).candidates.size() == 2);
  REQUIRE(seen->seen.size() == 1);
  CHECK_THAT(seen->seen[0], Catch::Contains("/nonexistent-dir/trace.json") && Catch::Contains("no trace is written"));
}
