// Tests for cotune/tune/tuning_result.hpp: candidate statuses, the choice of the winner, and the
// JSON that the tuning-result cache stores (written today, written by earlier versions, or damaged).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/detail/tuning_core.hpp>

using cotune::candidate_result;
using cotune::candidate_status;
using cotune::config;
using cotune::inf_ms;
using cotune::launch_options;
using cotune::provenance;
using cotune::select_best;
using cotune::tuning_result;

namespace {

constexpr candidate_status all_statuses[] = {candidate_status::ok,           candidate_status::compile_error,
                                             candidate_status::out_of_resources, candidate_status::launch_error,
                                             candidate_status::timeout,      candidate_status::error,
                                             candidate_status::not_run};

constexpr bool status_names_round_trip() {
  for (auto s : all_statuses)
    if (cotune::candidate_status_from(cotune::to_string(s)) != s) return false;
  return cotune::to_string(candidate_status::compile_error) == "compile error" &&
         cotune::to_string(candidate_status::not_run) == "not run" && !cotune::candidate_status_from("") &&
         !cotune::candidate_status_from("OK") && !cotune::candidate_status_from("compile_error") &&
         !cotune::candidate_status_from("ok ");
}

candidate_result ok(config cfg, cotune::timings t, int device = 0) {
  candidate_result c;
  c.cfg = std::move(cfg);
  c.status = candidate_status::ok;
  c.time = t;
  c.device = device;
  return c;
}

candidate_result failed(config cfg, candidate_status s, std::string reason) {
  candidate_result c;
  c.cfg = std::move(cfg);
  c.status = s;
  c.reason = std::move(reason);
  return c;
}

/// A result with a candidate of every status, awkward strings and every optional field set.
tuning_result every_field() {
  tuning_result r;
  r.kernel = "saxpy \"v2\"\\\tcaf\xc3\xa9";
  r.key_text = "n: 1024, x: float32\n";
  auto hooked = config{{"BLOCK", 128}, {"MODE", "fast"}}.with_launch(
      launch_options{.num_warps = 8, .num_stages = 2, .num_ctas = 2, .maxnreg = 128, .threads_per_block = 96});
  hooked.with_pre_hook("zero_out", [](const cotune::hook_args&) {});
  r.candidates.push_back(ok(config{{"BLOCK", 64}, {"SCALE", 0.5}, {"FAST", true}}, {1.5, 1.25, 2.0}, 0));
  r.candidates.back().compile_ms = 12.5;
  r.candidates.push_back(failed(config{{"BLOCK", 256}}, candidate_status::compile_error,
                                "kernel.cpp:3: error: expected ';'\n  int x = 1\n"));
  r.candidates.back().device = 0;
  r.candidates.push_back(ok(hooked, {3.0, 2.5, 3.5}, 1));
  r.candidates.back().screened_only = true;
  r.candidates.push_back(failed(config{{"BLOCK", 512}}, candidate_status::out_of_resources, "too many registers"));
  r.candidates.push_back(failed(config{{"BLOCK", 1024}}, candidate_status::launch_error, "invalid argument"));
  r.candidates.push_back(failed(config{{"BLOCK", 2048}}, candidate_status::timeout, "over 1000 ms"));
  r.candidates.push_back(failed(config{{"BLOCK", 4096}}, candidate_status::error, "std::bad_alloc"));
  r.candidates.push_back(failed(config{{"BLOCK", 8192}}, candidate_status::not_run, ""));
  r.winner = 0;
  r.wall_ms = 1234.5;
  r.made = provenance{"node-7", "NVIDIA H200 (sm_90)", "2024-05-01T12:00:00Z", "0.0.9"};
  return r;
}

void check_same_candidates(const tuning_result& a, const tuning_result& b) {
  REQUIRE(a.candidates.size() == b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    INFO("candidate " << i);
    const auto &x = a.candidates[i], &y = b.candidates[i];
    CHECK(x.cfg == y.cfg);
    CHECK(x.cfg.text() == y.cfg.text());
    CHECK(x.status == y.status);
    CHECK(x.reason == y.reason);
    CHECK(x.time == y.time);
    CHECK(x.device == y.device);
    CHECK(x.screened_only == y.screened_only);
  }
}

/// A result as `json()` writes it today (format 1, with "screened"), kept literally: results already
/// in caches must stay readable whatever the writer becomes.
constexpr std::string_view stored_today =
    R"({"format": 1, "kernel": "matmul", "key": "M: 512, N: 512, a: float32", "winner": 1, "wall_ms": 2841.75, "candidates": [
  {"config": {"params": {"BLOCK_M": 32, "SPLIT": false}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": null, "threads_per_block": null, "pre_hook": null}, "status": "ok", "reason": "", "timings_ms": [0.75, 0.7, 0.8], "compile_ms": 410.0, "device": 0, "screened": false},
  {"config": {"params": {"BLOCK_M": 64, "SPLIT": false}, "num_warps": 8, "num_stages": 3, "num_ctas": 1, "maxnreg": 128, "threads_per_block": null, "pre_hook": "zero_c"}, "status": "ok", "reason": "", "timings_ms": [0.5, 0.45, 0.55], "compile_ms": 398.5, "device": 1, "screened": false},
  {"config": {"params": {"BLOCK_M": 128, "SPLIT": true}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": null, "threads_per_block": 256, "pre_hook": null}, "status": "ok", "reason": "", "timings_ms": [1.25, 1.0, 1.5], "compile_ms": 405.0, "device": 0, "screened": true},
  {"config": {"params": {"BLOCK_M": 256, "SPLIT": true}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": null, "threads_per_block": null, "pre_hook": null}, "status": "out of resources", "reason": "needs 262144 bytes of shared memory, the device has 232448", "timings_ms": [null, null, null], "compile_ms": 390.0, "device": 1, "screened": false}],
 "provenance": {"host": "gpu-node-3", "device": "NVIDIA H200", "date": "2025-01-31T08:15:00Z", "cotune": "0.1.0"}}
)";

/// A result as the first writer stored it: format 1 without the "screened" field.
constexpr std::string_view stored_before_screening =
    R"({"format": 1, "kernel": "saxpy", "key": "n: 4096", "winner": 0, "wall_ms": 96.5, "candidates": [
  {"config": {"params": {"BLOCK": 128}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": null, "threads_per_block": null, "pre_hook": null}, "status": "ok", "reason": "", "timings_ms": [0.0125, 0.012, 0.013], "compile_ms": 35.5, "device": 0},
  {"config": {"params": {"BLOCK": 256}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": null, "threads_per_block": null, "pre_hook": null}, "status": "compile error", "reason": "error: 'BLOCK' redefined", "timings_ms": [null, null, null], "compile_ms": 30.0, "device": -1}],
 "provenance": {"host": "ci-runner", "device": "host", "date": "2024-11-02T10:00:00Z", "cotune": "0.1.0"}}
)";

/// A result with one candidate of config {B: 1}: `candidate_fields` are spliced into the candidate
/// object, `top_fields` into the top-level one.
std::string one_candidate(std::string_view candidate_fields,
                          std::string_view top_fields = R"("format": 1, "kernel": "k", "key": "")") {
  std::string out = "{";
  out += top_fields;
  out += R"(, "candidates": [{"config": {"params": {"B": 1}}, )";
  out += candidate_fields;
  out += "}]}";
  return out;
}

} // namespace

TEST_CASE("every candidate status has a name that reads back as that status", "[tune][tuning_result]") {
  static_assert(status_names_round_trip());
  CHECK(status_names_round_trip());
  for (auto s : all_statuses) CHECK(cotune::candidate_status_from(cotune::to_string(s)) == s);
  CHECK_FALSE(cotune::candidate_status_from("fast"));
}

TEST_CASE("a new candidate has no timing and has not run", "[tune][tuning_result]") {
  const candidate_result c;
  CHECK(c.status == candidate_status::not_run);
  CHECK(std::isinf(c.time[0]));
  CHECK(std::isinf(c.time[1]));
  CHECK(std::isinf(c.time[2]));
  CHECK(c.device == -1);
  CHECK_FALSE(c.screened_only);
  CHECK_FALSE(c.binary_from_cache);
}

TEST_CASE("the best candidate has the lowest median, then p20, then p80, and ties go to the earlier", "[tune][tuning_result]") {
  const config a{{"X", 1}}, b{{"X", 2}}, c{{"X", 3}};
  CHECK_FALSE(select_best({}));
  CHECK(select_best({ok(a, {2, 1, 3}), ok(b, {1, 5, 9}), ok(c, {3, 0, 0})}) == 1u);
  // Equal medians: the lower p20 wins, then the lower p80.
  CHECK(select_best({ok(a, {1, 0.9, 1.5}), ok(b, {1, 0.8, 2.0}), ok(c, {1, 0.8, 1.9})}) == 2u);
  CHECK(select_best({ok(a, {1, 0.8, 1.1}), ok(b, {1, 0.8, 1.0})}) == 1u);
  // Equal timings: the earlier config, whatever the order of the others.
  CHECK(select_best({ok(a, {1, 1, 1}), ok(b, {1, 1, 1}), ok(c, {1, 1, 1})}) == 0u);
  CHECK(select_best({ok(a, {2, 2, 2}), ok(b, {1, 1, 1}), ok(c, {1, 1, 1})}) == 1u);
  // An infinite p80 loses only against an equal median and p20.
  CHECK(select_best({ok(a, {1, 1, inf_ms}), ok(b, {1, 1, 7})}) == 1u);
  CHECK(select_best({ok(a, {1, 1, inf_ms}), ok(b, {1.5, 1, 1})}) == 0u);
}

TEST_CASE("a candidate timed only by screening never beats one measured in full", "[tune][tuning_result]") {
  // Screening times every candidate briefly and re-measures the close ones with the full budget; a
  // short pass's median is not comparable with a full one, so the finals decide.
  const config a{{"X", 0}}, b{{"X", 1}}, c{{"X", 2}};
  auto screened = [](candidate_result r) {
    r.screened_only = true;
    return r;
  };
  CHECK(select_best({ok(a, {1.05, 1.0, 1.1}), screened(ok(b, {1.04, 1.0, 1.1}))}) == 0u);
  CHECK(select_best({screened(ok(a, {0.5, 0.5, 0.5})), ok(b, {2, 2, 2}), ok(c, {1, 1, 1})}) == 2u);
  // With no full measurement (a result written by an interrupted tuning), the screening times decide.
  CHECK(select_best({screened(ok(a, {2, 2, 2})), screened(ok(b, {1, 1, 1}))}) == 1u);
  const auto back = tuning_result::from_json([&] {
    tuning_result r;
    r.kernel = "k";
    r.key_text = "n=1";
    r.candidates = {ok(a, {1.05, 1.0, 1.1}), screened(ok(b, {1.04, 1.0, 1.1}))};
    r.winner = 0;
    return r.json();
  }());
  REQUIRE(back);
  CHECK(back->winner == 0);
}

TEST_CASE("failed candidates are never the best, whatever timings they carry", "[tune][tuning_result]") {
  const config a{{"X", 1}}, b{{"X", 2}};
  auto bogus = failed(a, candidate_status::timeout, "late");
  bogus.time = {0.001, 0.001, 0.001}; // a timing a failed candidate should not have
  CHECK(select_best({bogus, ok(b, {5, 5, 5})}) == 1u);
  for (auto s : all_statuses) {
    if (s == candidate_status::ok) continue;
    CHECK_FALSE(select_best({failed(a, s, "x"), failed(b, s, "y")}));
  }
}

TEST_CASE("best() is the winner's config and refuses a winner out of range", "[tune][tuning_result]") {
  auto r = every_field();
  CHECK(r.best() == r.candidates[0].cfg);
  r.winner = 2;
  CHECK(r.best().at("BLOCK").as_int() == 128);
  r.winner = r.candidates.size();
  CHECK_THROWS_AS(r.best(), std::out_of_range);
  CHECK_THROWS_AS(tuning_result{}.best(), std::out_of_range);
}

TEST_CASE("every field read from the cache survives a JSON round trip", "[tune][tuning_result]") {
  const auto r = every_field();
  const std::string text = r.json();
  CHECK_THAT(text, Catch::StartsWith(R"({"format": 1, )"));
  const auto back = tuning_result::from_json(text);
  REQUIRE(back);
  CHECK(back->kernel == r.kernel);
  CHECK(back->key_text == r.key_text);
  CHECK(back->winner == 0);
  CHECK(back->best() == r.best());
  CHECK(back->from_cache);
  CHECK_FALSE(r.from_cache);
  check_same_candidates(*back, r);
  // The pre-hook comes back by name only: its function is the caller's.
  REQUIRE(back->candidates[2].cfg.pre_hook());
  CHECK(back->candidates[2].cfg.pre_hook()->name == "zero_out");
  CHECK_FALSE(back->candidates[2].cfg.pre_hook()->fn);
  CHECK(back->made.host == r.made.host);
  CHECK(back->made.device == r.made.device);
  CHECK(back->made.date == r.made.date);
  CHECK(back->made.cotune_version == "0.0.9");
  // Written again, the result is the same text.
  CHECK(back->json() == r.json());
}

TEST_CASE("failed candidates are stored as null timings and read back as infinities", "[tune][tuning_result]") {
  const auto r = every_field();
  const std::string text = r.json();
  CHECK_THAT(text, Catch::Contains(R"("status": "compile error", "reason": "kernel.cpp:3: error: expected ';'\n  int x = 1\n", )"
                                   R"("timings_ms": [null, null, null])"));
  CHECK_THAT(text, !Catch::Contains("inf") && !Catch::Contains("Infinity"));
  const auto back = tuning_result::from_json(text);
  REQUIRE(back);
  for (const auto& c : back->candidates) {
    if (c.status == candidate_status::ok) {
      CHECK(std::isfinite(c.time[0]));
    } else {
      CHECK(std::isinf(c.time[0]));
      CHECK(std::isinf(c.time[1]));
      CHECK(std::isinf(c.time[2]));
      CHECK(c.time[0] > 0);
    }
  }
}

TEST_CASE("a failure's message that is not UTF-8 is recorded as UTF-8, so its result is stored and read back",
          "[tune][tuning_result]") {
  // A compiler echoing a source line saved in Latin-1 ("Größe"): written raw, the cached result was not JSON
  // and every later run missed it.
  tuning_result r;
  r.kernel = "k";
  r.key_text = "n=1";
  candidate_result ok{config{{"B", 1}}};
  ok.status = candidate_status::ok;
  ok.time = {1, 1, 1};
  candidate_result failed{config{{"B", 2}}};
  cotune::detail::record_failure(failed, std::make_exception_ptr(cotune::compile_error("k.cpp:1: 'Gr\xF6\xDF"
                                                                                       "e'",
                                                                                       "")));
  CHECK(failed.status == candidate_status::compile_error);
  CHECK(failed.reason.find("k.cpp:1: 'Gr\xEF\xBF\xBD\xEF\xBF\xBD"
                           "e'") != std::string::npos);
  r.candidates = {ok, failed};
  const auto back = tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK(back->candidates[1].reason == failed.reason);
}

// from_json() used to drop "compile_ms" (and "wall_ms"): a result read from the cache reported 0 ms
// compiles.
TEST_CASE("compile times survive a JSON round trip", "[tune][tuning_result]") {
  const auto r = every_field();
  const auto back = tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK(back->candidates[0].compile_ms == 12.5);
  CHECK(back->wall_ms == r.wall_ms);
}

TEST_CASE("a result stored by today's writer (format 1) is read", "[tune][tuning_result]") {
  const auto r = tuning_result::from_json(stored_today);
  REQUIRE(r);
  CHECK(r->kernel == "matmul");
  CHECK(r->key_text == "M: 512, N: 512, a: float32");
  REQUIRE(r->candidates.size() == 4);
  CHECK(r->winner == 1);
  CHECK(r->best() == config{{"BLOCK_M", 64}, {"SPLIT", false}}
                         .with_launch(launch_options{.num_warps = 8, .maxnreg = 128})
                         .with_pre_hook("zero_c", {}));
  CHECK(r->candidates[0].time == cotune::timings{0.75, 0.7, 0.8});
  CHECK(r->candidates[1].device == 1);
  CHECK(r->candidates[2].screened_only);
  CHECK(r->candidates[2].cfg.launch().threads_per_block == 256);
  CHECK(r->candidates[3].status == candidate_status::out_of_resources);
  CHECK_THAT(r->candidates[3].reason, Catch::Contains("232448"));
  CHECK(std::isinf(r->candidates[3].time[0]));
  CHECK(r->made.host == "gpu-node-3");
  CHECK(r->made.device == "NVIDIA H200");
  CHECK(r->made.date == "2025-01-31T08:15:00Z");
  CHECK(r->made.cotune_version == "0.1.0");
  CHECK(r->from_cache);
}

TEST_CASE("a result stored before screening existed is read, unscreened", "[tune][tuning_result]") {
  const auto r = tuning_result::from_json(stored_before_screening);
  REQUIRE(r);
  REQUIRE(r->candidates.size() == 2);
  CHECK(r->winner == 0);
  CHECK_FALSE(r->candidates[0].screened_only);
  CHECK(r->candidates[0].time == cotune::timings{0.0125, 0.012, 0.013});
  CHECK(r->candidates[1].status == candidate_status::compile_error);
  CHECK(r->candidates[1].device == -1);
  CHECK(r->made.host == "ci-runner");
}

TEST_CASE("a result of a later format is refused", "[tune][tuning_result]") {
  auto with_format = [](std::string_view format) {
    std::string text(stored_today);
    text.replace(text.find(R"("format": 1)"), 11, std::string(R"("format": )") + std::string(format));
    return text;
  };
  REQUIRE(tuning_result::from_json(with_format("1")));
  CHECK_FALSE(tuning_result::from_json(with_format("2")));
  CHECK_FALSE(tuning_result::from_json(with_format("99")));
  CHECK_FALSE(tuning_result::from_json(with_format("0")));
  CHECK_FALSE(tuning_result::from_json(with_format("-1")));
  CHECK_FALSE(tuning_result::from_json(with_format("1.5")));
  CHECK_FALSE(tuning_result::from_json(with_format(R"("1")")));
  CHECK_FALSE(tuning_result::from_json(with_format("null")));
  CHECK_FALSE(tuning_result::from_json(with_format("18446744073709551615")));
  std::string no_format(stored_today);
  no_format.replace(no_format.find(R"("format": 1, )"), 13, "");
  CHECK_FALSE(tuning_result::from_json(no_format));
}

TEST_CASE("text that is not JSON, or not a result, is refused without a crash", "[tune][tuning_result]") {
  for (std::string_view text : {"", " ", "{", "}", "[]", "null", "42", "\"format\"", "{\"format\": 1",
                                "{\"format\": 1}", "{\"format\": 1, \"kernel\": \"k\", \"key\": \"\"}", "\xff\xfe{}",
                                "{\"format\": 1, \"kernel\": \"\xc3\x28\", \"key\": \"\", \"candidates\": []}"}) {
    INFO("text: " << text);
    CHECK_FALSE(tuning_result::from_json(text));
  }
  // Text after a complete result.
  // Appended in place: g++ 13 at -O2 warns falsely on `std::string(...) + "..."` (-Warray-bounds).
  for (const char* tail : {"{}", "x"}) {
    std::string text(stored_today);
    text += tail;
    CHECK_FALSE(tuning_result::from_json(text));
  }
  // A NUL byte in the middle.
  std::string with_nul(stored_today);
  with_nul[40] = '\0';
  CHECK_FALSE(tuning_result::from_json(with_nul));
}

TEST_CASE("every truncation of a stored result is refused", "[tune][tuning_result]") {
  const std::string text = every_field().json();
  REQUIRE(text.back() == '\n');
  std::size_t accepted = 0;
  // Every prefix short of the closing brace is refused; the one without the final newline is whole.
  for (std::size_t n = 0; n + 1 < text.size(); ++n)
    if (tuning_result::from_json(std::string_view(text).substr(0, n))) ++accepted;
  CHECK(accepted == 0);
  CHECK(tuning_result::from_json(std::string_view(text).substr(0, text.size() - 1)));
}

TEST_CASE("required fields of the wrong type make the result unreadable", "[tune][tuning_result]") {
  const std::string ok_fields = R"("status": "ok", "reason": "", "timings_ms": [1.0, 0.5, 1.5])";
  REQUIRE(tuning_result::from_json(one_candidate(ok_fields)));
  // The top level.
  CHECK_FALSE(tuning_result::from_json(one_candidate(ok_fields, R"("format": 1, "kernel": 3, "key": "")")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(ok_fields, R"("format": 1, "kernel": "k", "key": null)")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(ok_fields, R"("format": 1, "key": "")")));
  CHECK_FALSE(tuning_result::from_json(R"({"format": 1, "kernel": "k", "key": "", "candidates": {}})"));
  CHECK_FALSE(tuning_result::from_json(R"({"format": 1, "kernel": "k", "key": "", "candidates": [1]})"));
  CHECK_FALSE(tuning_result::from_json(R"({"format": 1, "kernel": "k", "key": "", "candidates": [[]]})"));
  CHECK_FALSE(tuning_result::from_json(R"({"format": 1, "kernel": "k", "key": "", "candidates": []})"));
  // A candidate's config.
  auto with_config = [&](std::string_view cfg) {
    return std::string(R"({"format": 1, "kernel": "k", "key": "", "candidates": [{"config": )") + std::string(cfg) +
           ", " + ok_fields + "}]}";
  };
  REQUIRE(tuning_result::from_json(with_config(R"({"params": {}})")));
  CHECK_FALSE(tuning_result::from_json(with_config("null")));
  CHECK_FALSE(tuning_result::from_json(with_config("[1]")));
  CHECK_FALSE(tuning_result::from_json(with_config(R"({"params": {"B": [1]}})")));
  CHECK_FALSE(tuning_result::from_json(with_config(R"({"params": {"not-an-identifier": 1}})")));
  CHECK_FALSE(tuning_result::from_json(with_config(R"({"params": {}, "num_warps": "4"})")));
  CHECK_FALSE(tuning_result::from_json(with_config(R"({"params": {}, "num_warps": 99999999999})")));
  CHECK_FALSE(tuning_result::from_json(with_config(R"({"params": {}, "pre_hook": 7})")));
  CHECK_FALSE(tuning_result::from_json(
      R"({"format": 1, "kernel": "k", "key": "", "candidates": [{"status": "ok", "timings_ms": [1, 1, 1]}]})"));
  // A candidate's status and timings.
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "fast", "timings_ms": [1.0, 0.5, 1.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": 0, "timings_ms": [1.0, 0.5, 1.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("timings_ms": [1.0, 0.5, 1.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok")")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [1.0, 0.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [1.0, 0.5, 1.5, 2.0])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": ["1.0", 0.5, 1.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [1.0, true, 1.5])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [1.0, 0.5, [1.5]])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": {"median": 1.0})")));
}

TEST_CASE("optional fields of the wrong type are left at their defaults", "[tune][tuning_result]") {
  const auto r = tuning_result::from_json(
      one_candidate(R"("status": "ok", "reason": 5, "timings_ms": [1, 2, 3], "device": "0", "screened": "yes")",
                    R"("format": 1, "kernel": "k", "key": "", "winner": "first", "wall_ms": "slow", "provenance": [])"));
  REQUIRE(r);
  const auto& c = r->candidates.at(0);
  CHECK(c.reason.empty());
  CHECK(c.time == cotune::timings{1, 2, 3}); // integers are timings too
  CHECK(c.device == -1);
  CHECK_FALSE(c.screened_only);
  CHECK(r->made.host.empty());
  CHECK(r->made.cotune_version == std::string(cotune::version));
  const auto partial = tuning_result::from_json(one_candidate(
      R"("status": "ok", "timings_ms": [1, 2, 3])",
      R"("format": 1, "kernel": "k", "key": "", "provenance": {"host": "h", "device": 1, "cotune": null})"));
  REQUIRE(partial);
  CHECK(partial->made.host == "h");
  CHECK(partial->made.device.empty());
}

TEST_CASE("timings from other writers: Infinity and NaN are read as no timing", "[tune][tuning_result]") {
  // A failed candidate with non-finite tokens (Python's json module writes them).
  const auto r = tuning_result::from_json(
      R"({"format": 1, "kernel": "k", "key": "", "candidates": [
        {"config": {"params": {"B": 1}}, "status": "timeout", "timings_ms": [Infinity, -Infinity, NaN]},
        {"config": {"params": {"B": 2}}, "status": "ok", "timings_ms": [2.0, 1.5, NaN]},
        {"config": {"params": {"B": 3}}, "status": "ok", "timings_ms": [2.0, 1.5, 2.5],
         "reason": "NaN and Infinity stay text"}]})");
  REQUIRE(r);
  CHECK(std::isinf(r->candidates[0].time[0]));
  CHECK(std::isinf(r->candidates[0].time[1]));
  CHECK(r->candidates[0].time[1] > 0);
  CHECK(std::isinf(r->candidates[0].time[2]));
  CHECK(std::isinf(r->candidates[1].time[2])); // NaN p80: no p80, so it loses the tie on p80
  CHECK(r->winner == 2);
  CHECK(r->candidates[2].reason == "NaN and Infinity stay text");
  // An ok candidate without a finite median is inconsistent.
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [Infinity, 1, 1])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [NaN, 1, 1])")));
  CHECK_FALSE(tuning_result::from_json(one_candidate(R"("status": "ok", "timings_ms": [null, 1, 1])")));
}

TEST_CASE("the winner is chosen again from the stored timings, not trusted", "[tune][tuning_result]") {
  const auto r = tuning_result::from_json(
      R"({"format": 1, "kernel": "k", "key": "", "winner": 0, "candidates": [
        {"config": {"params": {"B": 1}}, "status": "ok", "timings_ms": [3, 3, 3]},
        {"config": {"params": {"B": 2}}, "status": "compile error", "reason": "x", "timings_ms": [0.1, 0.1, 0.1]},
        {"config": {"params": {"B": 3}}, "status": "ok", "timings_ms": [2, 2, 2]},
        {"config": {"params": {"B": 4}}, "status": "ok", "timings_ms": [2, 2, 2]}]})");
  REQUIRE(r);
  CHECK(r->winner == 2);
  // A failed candidate's stored timing is dropped.
  CHECK(std::isinf(r->candidates[1].time[0]));
  // Every candidate failed: nothing to load, so the stored result is unusable.
  CHECK_FALSE(tuning_result::from_json(
      one_candidate(R"("status": "compile error", "reason": "x", "timings_ms": [null, null, null])")));
}

TEST_CASE("provenance here() names this host, the device, a UTC date and this version", "[tune][tuning_result]") {
  const auto p = provenance::here("cpu0");
  CHECK_FALSE(p.host.empty());
  CHECK(p.device == "cpu0");
  CHECK(p.cotune_version == std::string(cotune::version));
  // YYYY-MM-DDTHH:MM:SSZ
  REQUIRE(p.date.size() == 20);
  CHECK(p.date[4] == '-');
  CHECK(p.date[10] == 'T');
  CHECK(p.date.back() == 'Z');
}

TEST_CASE("a result of a backend without launch options shows its configs without them, stored and read back",
          "[tune][tuning_result]") {
  cotune::tuning_result r;
  r.kernel = "k";
  r.key_text = "n=1";
  cotune::candidate_result c{cotune::config{{"TILE", 16}, {"UNROLL", 1}}};
  c.status = cotune::candidate_status::ok;
  c.time = {1, 1, 1};
  r.candidates.push_back(c);
  CHECK(r.shown(r.best()) == r.best().text()); // GPU backends: everything
  r.launch_options = false;
  CHECK(r.shown(r.best()) == "TILE: 16, UNROLL: 1");
  const auto back = cotune::tuning_result::from_json(r.json());
  REQUIRE(back);
  CHECK_FALSE(back->launch_options);
  CHECK(back->shown(back->best()) == "TILE: 16, UNROLL: 1");
  CHECK(cotune::config{}.params_text() == "(no parameters)");
}
