// Serving without waiting (tune_options::first_call, first_call_mode::serve) on the CPU: real host
// kernels built by the host compiler, a real tuning database file, real threads.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <cotune/cotune.hpp>

#include "tuning_fixture.hpp"

using namespace cotune;
using cotune_test::cost_configs;
using cotune_test::private_cache;
using cotune_test::quick_bench;
using cotune_test::work_kernel;

namespace {

using work_tuner = autotuner<void(int*, int)>;

/// The COST of the config whose run left `out` (the work kernel writes 0 + 1 + ... + (n*COST - 1)), or -1.
int cost_that_ran(int out, int n) {
  for (int cost : {1, 2, 4, 8, 16}) {
    const std::int64_t m = std::int64_t{n} * cost;
    if (static_cast<int>(m * (m - 1) / 2) == out) return cost;
  }
  return -1;
}

/// Records the serving events.
struct serving_observer final : observer {
  struct served {
    std::string key, cfg, neighbour;
    stand_in_source source;
  };
  struct replaced {
    std::string key, stand_in, winner;
  };
  std::vector<served> stand_ins;
  std::vector<replaced> replacements;
  std::vector<std::string> warnings;
  std::mutex mutex;

  [[nodiscard]] std::vector<served> served_copy() {
    std::lock_guard lock(mutex);
    return stand_ins;
  }

protected:
  void on_event(const tuning_event& e) override {
    std::lock_guard lock(mutex);
    if (const auto* s = std::get_if<stand_in_served>(&e))
      stand_ins.push_back({s->key_text, s->cfg->params_text(), s->neighbour, s->source});
    else if (const auto* r = std::get_if<stand_in_replaced>(&e))
      replacements.push_back({r->key_text, r->stand_in->params_text(), r->winner ? r->winner->params_text() : ""});
    else if (const auto* w = std::get_if<tuning_warning>(&e))
      warnings.push_back(w->message);
  }
};

work_tuner::options serving_options(std::shared_ptr<observer> obs) {
  return {.arg_names = {"out", "n"},
          .key = {"n"},
          .bench = quick_bench(),
          .observers = {std::move(obs)},
          .first_call = first_call_mode::serve};
}

/// The same, tuning on `spare` instead of the caller's output (the caller's buffer stays the stand-in's).
work_tuner::options serving_options(std::shared_ptr<observer> obs, int& spare) {
  auto opts = serving_options(std::move(obs));
  opts.tuning_args = [&spare](int*, int n) { return std::tuple<int*, int>(&spare, n); };
  return opts;
}

} // namespace

TEST_CASE("key_distance compares keys of one shape on a log scale and refuses keys of different shapes",
          "[tune][serving][key_distance]") {
  const key_shape s = key_shape::of("x: float32[4096], n=64, alpha=-1.5e+00");
  CHECK(s.skeleton == "x: float32[#], n=#, alpha=#");
  CHECK(s.values == std::vector<double>{4096, 64, -1.5});
  CHECK(key_distance("n=64", "n=64") == std::optional<double>(0.0));
  // Doubling is one step wherever it happens (nearly: log2(1 + v)).
  const double near = *key_distance("n=1024", "n=2048");
  const double far = *key_distance("n=1024", "n=8192");
  CHECK(near == Approx(1.0).margin(0.01));
  CHECK(far == Approx(3.0).margin(0.01));
  CHECK(*key_distance("m=64, n=64", "m=128, n=128") == Approx(std::sqrt(2.0)).margin(0.03));
  // Another element type, another argument, another count of numbers: no distance at all.
  CHECK_FALSE(key_distance("x: float32[64]", "x: float16[64]"));
  CHECK_FALSE(key_distance("n=64", "m=64"));
  CHECK_FALSE(key_distance("n=64", "n=64, k=2"));
  CHECK(key_distance("mode=0", "mode=-3")); // zero and negative values are values too
}

TEST_CASE("a new key's stand-ins and seeds: shipped winner, nearest tuned keys' winners, default, first, each once; "
          "the key itself and keys at no finite distance are left out",
          "[tune][serving][key_distance]") {
  const std::vector<config> pruned = cost_configs({16, 4, 2, 1});
  auto tuned_result = [](std::string key, int cost) {
    auto r = std::make_shared<tuning_result>();
    r->key_text = std::move(key);
    r->candidates.push_back(candidate_result{.cfg = config{{"COST", cost}}});
    return std::shared_ptr<const tuning_result>(r);
  };
  // Tuned in this order: n=100 (winner COST 2), n=3200 (COST 4), n=400 (COST 2 again), m=5 (another shape).
  const std::vector<std::shared_ptr<const tuning_result>> tuned = {
      tuned_result("n=100", 2), tuned_result("n=3200", 4), tuned_result("n=400", 2), tuned_result("m=5", 1)};
  const auto choices =
      detail::stand_in_choices("n=500", pruned, {}, config{{"COST", 4}}, tuned, config{{"COST", 16}});
  REQUIRE(choices.size() == 3);
  CHECK(choices[0].index == 1); // COST 4, the shipped winner (n=3200's too, so not again as a neighbour)
  CHECK(choices[0].source == stand_in_source::database);
  CHECK(choices[1].index == 2); // COST 2: n=400 is nearer than n=100, and taken once
  CHECK(choices[1].source == stand_in_source::neighbour);
  CHECK(choices[1].neighbour == "n=400");
  CHECK(choices[2].index == 0); // COST 16: the default and the first candidate, once
  CHECK(choices[2].source == stand_in_source::default_config);

  // Seeds: the key itself (n=400, distance 0) is no neighbour of its own; the nearest first, at most 1.
  CHECK(detail::nearest_winners("n=400", pruned, {}, tuned, 4) == std::vector<std::size_t>{2, 1});
  CHECK(detail::nearest_winners("n=400", pruned, {}, tuned, 1) == std::vector<std::size_t>{2});
  // A key that holds the same overflowing literal as a tuned one is at no finite distance: left out.
  const std::vector<std::shared_ptr<const tuning_result>> overflowing = {tuned_result("a=1e999, n=5", 1)};
  CHECK(detail::nearest_keys("a=1e999, n=6", overflowing, true).empty());

  // The shipped lookup: a source that throws, or a device name that cannot be read, is a warning.
  const winner_source saved = shipped_winner_source();
  shipped_winner_source() = [](std::string_view, std::string_view, std::string_view,
                               const std::vector<config>&) -> std::optional<tuning_result> { return std::nullopt; };
  std::string warning;
  CHECK_FALSE(detail::shipped_winner(
      "k", "n=1", []() -> std::string { throw std::runtime_error("no such device"); }, pruned, warning));
  CHECK(warning == "the shipped tuning database is unusable (no such device); no stand-in from it");
  shipped_winner_source() = saved;
}

TEST_CASE("a first call is served by the first candidate at once and every later call runs the tuned winner",
          "[tune][serving]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0; // the background tuning's own output, so that the caller's `out` is its alone
  auto opts = serving_options(obs, spare);
  work_tuner tuner{work_kernel("serve_first"), cost_configs({16, 1, 4}), opts};
  int out = 0;
  tuner(&out, 2000);
  // The call did not wait for the tuning: it ran the stand-in, the first candidate (16 times the
  // winner's work, so never the winner).
  CHECK(cost_that_ran(out, 2000) == 16);
  REQUIRE(obs->served_copy().size() == 1);
  CHECK(obs->served_copy()[0].source == stand_in_source::first);
  CHECK(obs->served_copy()[0].cfg == "COST: 16");
  tuner.wait_tuned();
  CHECK(tuner.background_tunings() == 0);
  REQUIRE(tuner.best_config(&out, 2000));
  const int winner = static_cast<int>(tuner.best_config(&out, 2000)->at("COST").as_int());
  CHECK(winner != 16);
  CHECK(tuner.serving_config(&out, 2000) == tuner.best_config(&out, 2000));
  for (int i = 0; i < 3; ++i) {
    out = 0;
    tuner(&out, 2000);
    CHECK(cost_that_ran(out, 2000) == winner);
  }
  std::lock_guard lock(obs->mutex);
  REQUIRE(obs->replacements.size() == 1);
  CHECK(obs->replacements[0].stand_in == "COST: 16");
  CHECK(obs->replacements[0].winner == fmt::format("COST: {}", winner));
  CHECK(obs->stand_ins.size() == 1); // once per key, not per call
}

TEST_CASE("a stand-in is the options' default config when nothing better is known", "[tune][serving]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  opts.default_config = config{{"COST", 8}};
  work_tuner tuner{work_kernel("serve_default"), cost_configs({16, 1, 8}), opts};
  int out = 0;
  tuner(&out, 1000);
  CHECK(cost_that_ran(out, 1000) == 8);
  REQUIRE(obs->served_copy().size() == 1);
  CHECK(obs->served_copy()[0].source == stand_in_source::default_config);
  tuner.wait_tuned();
}

TEST_CASE("a stand-in is the winner of the nearest tuned key of the same shape, before the default",
          "[tune][serving]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  opts.default_config = config{{"COST", 16}};
  // Two tuned keys whose winners are known without measuring: each has one candidate left.
  opts.early_config_prune = [](const std::vector<config>& all, int*, int n) {
    if (n == 100) return std::vector<config>{all[1]};  // COST 4
    if (n == 3200) return std::vector<config>{all[2]}; // COST 2
    return all;
  };
  work_tuner tuner{work_kernel("serve_neighbour"), cost_configs({16, 4, 2, 1}), opts};
  int out = 0;
  CHECK(tuner.tune_now(&out, 100).best().at("COST").as_int() == 4);
  CHECK(tuner.tune_now(&out, 3200).best().at("COST").as_int() == 2);
  tuner(&out, 200); // one doubling from 100, four halvings from 3200
  CHECK(cost_that_ran(out, 200) == 4);
  tuner(&out, 1600); // one halving from 3200
  CHECK(cost_that_ran(out, 1600) == 2);
  tuner.wait_tuned();
  const auto served = obs->served_copy();
  REQUIRE(served.size() == 2);
  CHECK(served[0].source == stand_in_source::neighbour);
  CHECK(served[0].neighbour == "n=100");
  CHECK(served[1].source == stand_in_source::neighbour);
  CHECK(served[1].neighbour == "n=3200");
}

TEST_CASE("a stand-in is the shipped database's winner for the key before any neighbour", "[tune][serving]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-serving-db");
  batch::tuning_database db;
  batch::database_entry e;
  e.kernel = "serve_database";
  e.key = "n=500";
  e.device = host_backend{}.device_name({});
  e.winner = config{{"COST", 8}};
  e.time = {1.0, 1.0, 1.0};
  e.launch_options = false;
  db.add(e);
  db.save(dir / "app.db.json");
  auto path = batch::job_knobs().database.scoped((dir / "app.db.json").string());

  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  opts.default_config = config{{"COST", 16}};
  // The tuned neighbour's winner is COST 1 without measuring (a measurement could pick COST 8 on a loaded machine).
  opts.early_config_prune = [](const std::vector<config>& all, int*, int n) {
    return n == 400 ? std::vector<config>{all[1]} : all;
  };
  work_tuner tuner{work_kernel("serve_database"), cost_configs({16, 1, 8}), opts};
  int out = 0;
  tuner.tune_now(&out, 400); // a tuned neighbour, whose winner is not COST 8
  REQUIRE(tuner.best_config(&out, 400)->at("COST").as_int() == 1);
  tuner(&out, 500);
  CHECK(cost_that_ran(out, 500) == 8);
  tuner.wait_tuned();
  const auto served = obs->served_copy();
  REQUIRE(served.size() == 1);
  CHECK(served[0].source == stand_in_source::database);
  // The background tuning adopts the database's winner as a blocking call would.
  CHECK(tuner.best_config(&out, 500)->at("COST").as_int() == 8);
}

TEST_CASE("a damaged shipped database is reported and gives no stand-in: the next choice serves, the key still tunes",
          "[tune][serving]") {
  private_cache cache;
  cotune_test::temp_dir dir("cotune-serving-bad-db");
  {
    std::ofstream f(dir / "app.db.json");
    f << "{\"format\": \"cotune.tuning_database\", \"entries\": [ {\"kernel\": ";
  }
  auto path = batch::job_knobs().database.scoped((dir / "app.db.json").string());
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  opts.default_config = config{{"COST", 8}};
  work_tuner tuner{work_kernel("serve_bad_database"), cost_configs({16, 1, 8}), opts};
  int out = 0;
  tuner(&out, 700);
  CHECK(cost_that_ran(out, 700) == 8);
  tuner.wait_tuned();
  REQUIRE(obs->served_copy().size() == 1);
  CHECK(obs->served_copy()[0].source == stand_in_source::default_config);
  std::lock_guard lock(obs->mutex);
  CHECK(std::any_of(obs->warnings.begin(), obs->warnings.end(), [](const std::string& w) {
    return w.find("the shipped tuning database is unusable (") != std::string::npos &&
           w.find("app.db.json") != std::string::npos && w.find("no stand-in from it") != std::string::npos;
  }));
  CHECK(tuner.best_config(&out, 700) != nullptr);
}

TEST_CASE("COTUNE_FIRST_CALL chooses between waiting (the default) and serving; the options override it",
          "[tune][serving][knobs]") {
  private_cache cache;
  int spare = 0;
  {
    work_tuner waits{work_kernel("serve_knob_wait"), cost_configs({16, 1}),
                     {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
    int out = 0;
    waits(&out, 700);
    CHECK(waits.measured_tunings() == 1); // tuned before it launched
    CHECK(cost_that_ran(out, 700) == 1);
  }
  {
    auto serve = knobs().autotuning.first_call.scoped("serve");
    work_tuner serves{work_kernel("serve_knob_serve"), cost_configs({16, 1}),
                      {.arg_names = {"out", "n"},
                       .key = {"n"},
                       .bench = quick_bench(),
                       .tuning_args = [&spare](int*, int n) { return std::tuple<int*, int>(&spare, n); }}};
    int out = 0;
    serves(&out, 700);
    CHECK(cost_that_ran(out, 700) == 16);
    serves.wait_tuned();
    work_tuner waits{work_kernel("serve_knob_override"), cost_configs({16, 1}),
                     {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .first_call = first_call_mode::wait}};
    waits(&out, 700);
    CHECK(waits.measured_tunings() == 1);
  }
  CHECK_THROWS_WITH(knobs().autotuning.first_call.scoped("later"), Catch::Contains("COTUNE_FIRST_CALL=later"));
}

TEST_CASE("a stand-in whose launch throws is retired: that call gets the error, later calls wait for the winner",
          "[tune][serving]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  std::vector<config> configs = cost_configs({16, 1, 4});
  configs[0].with_pre_hook("fails", [](const hook_args&) { throw std::runtime_error("stand-in hook failed"); });
  work_tuner tuner{work_kernel("serve_throws"), configs, opts};
  int out = 0;
  CHECK_THROWS_WITH(tuner(&out, 900), Catch::Contains("stand-in hook failed"));
  tuner(&out, 900); // waits for the tuning (already running in the background) and runs its winner
  const int winner = static_cast<int>(tuner.best_config(&out, 900)->at("COST").as_int());
  CHECK(winner != 16);
  CHECK(cost_that_ran(out, 900) == winner);
  tuner.wait_tuned();
  std::lock_guard lock(obs->mutex);
  bool retired = false;
  for (const auto& w : obs->warnings) retired = retired || w.find("failed to launch") != std::string::npos;
  CHECK(retired);
}

TEST_CASE("eight threads calling through a background tuning run the stand-in or the winner, then only the winner",
          "[tune][serving][threads]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  std::array<int, 2> spare{};
  auto opts = serving_options(obs);
  opts.tuning_args = [&spare](int*, int n) { return std::tuple<int*, int>(&spare[n == 1100 ? 0 : 1], n); };
  work_tuner tuner{work_kernel("serve_threads"), cost_configs({16, 1, 4}), opts};
  constexpr int threads = 8;
  const std::array<int, 2> sizes{1100, 1300};
  std::atomic<bool> go{false};
  std::atomic<int> wrong{0}, stand_in_runs{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      int out = 0;
      for (int i = 0; i < 40; ++i) {
        const int n = sizes[(t + i) % 2];
        tuner(&out, n);
        const int ran = cost_that_ran(out, n);
        // Each call runs the key's stand-in (the first candidate) or, once tuned, its winner.
        const config* best = tuner.best_config(&out, n);
        if (ran == 16) ++stand_in_runs;
        else if (ran < 0 || (best && ran != best->at("COST").as_int())) ++wrong;
      }
    });
  go = true;
  for (auto& th : pool) th.join();
  tuner.wait_tuned();
  CHECK(wrong.load() == 0);
  CHECK(stand_in_runs.load() >= 1); // at least each key's first call
  CHECK(obs->served_copy().size() == 2); // one stand-in per key, whatever the number of callers
  // After the tunings ended, every call of every thread runs its key's winner.
  std::atomic<int> after_wrong{0};
  pool.clear();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      int out = 0;
      for (int i = 0; i < 20; ++i) {
        const int n = sizes[(t + i) % 2];
        tuner(&out, n);
        if (cost_that_ran(out, n) != tuner.best_config(&out, n)->at("COST").as_int()) ++after_wrong;
      }
    });
  for (auto& th : pool) th.join();
  CHECK(after_wrong.load() == 0);
  CHECK(tuner.measured_tunings() == 2);
}

namespace {

/// The candidates a key's tuning measured, in the order it measured them (host: one device).
struct measure_order final : observer {
  std::vector<std::pair<std::string, std::string>> measured; ///< key text, config
  std::mutex mutex;

protected:
  void on_event(const tuning_event& e) override {
    if (const auto* m = std::get_if<candidate_measured>(&e)) {
      std::lock_guard lock(mutex);
      measured.emplace_back(m->key_text, m->result->cfg.params_text());
    }
  }
};

} // namespace

TEST_CASE("a new key's search starts from the winner of the nearest tuned key: a budgeted search proposes it "
          "first, an exhaustive one measures it first",
          "[tune][serving][transfer]") {
  private_cache cache;
  auto order = std::make_shared<measure_order>();
  auto options = [&](std::shared_ptr<const search_strategy> search, std::optional<search_settings> budget) {
    work_tuner::options o{.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench(), .observers = {order}};
    o.search = std::move(search);
    o.search_budget = budget;
    // The tuned neighbour's winner is known without measuring: one candidate left for n=100.
    o.early_config_prune = [](const std::vector<config>& all, int*, int n) {
      return n == 100 ? std::vector<config>{all[2]} : all; // COST 2
    };
    return o;
  };
  int out = 0;
  SECTION("budgeted") {
    work_tuner tuner{work_kernel("transfer_budget"), cost_configs({16, 8, 2, 4}),
                     options(std::make_shared<random_search>(), search_settings{.evaluations = 1, .seed = 3})};
    tuner.tune_now(&out, 100);
    const auto& r = tuner.tune_now(&out, 240);
    // One evaluation: the seed, whatever the random search would have drawn.
    for (const auto& c : r.candidates) {
      INFO(c.cfg.params_text());
      CHECK((c.status == candidate_status::ok) == (c.cfg.at("COST").as_int() == 2));
    }
  }
  SECTION("exhaustive") {
    work_tuner tuner{work_kernel("transfer_exhaustive"), cost_configs({16, 8, 2, 4}), options(nullptr, std::nullopt)};
    tuner.tune_now(&out, 100);
    tuner.tune_now(&out, 240);
    std::lock_guard lock(order->mutex);
    std::vector<std::string> second;
    for (const auto& [key, cfg] : order->measured)
      if (key == "n=240") second.push_back(cfg);
    REQUIRE(second.size() == 4);
    CHECK(second.front() == "COST: 2"); // the seed first, then config order
    CHECK(second[1] == "COST: 16");
  }
}

TEST_CASE("a device's share leaves it to the program for (1 - share) / share of each background busy period",
          "[tune][serving][background]") {
  using clock = detail::device_share::clock;
  using std::chrono::milliseconds;
  const auto t0 = clock::time_point{} + std::chrono::seconds(100);
  detail::device_share share;
  CHECK(share.pause(t0) == clock::duration::zero()); // nothing measured yet
  share.busy(t0, t0 + milliseconds(10), 0.25);       // 10 ms at a quarter: 30 ms left to the program
  CHECK(share.pause(t0 + milliseconds(10)) == milliseconds(30));
  CHECK(share.pause(t0 + milliseconds(25)) == milliseconds(15)); // idle time already passed counts
  CHECK(share.pause(t0 + milliseconds(40)) == clock::duration::zero());
  // A busy period that ran during the pause (a queued measurement) adds its own idle time after it.
  share.busy(t0 + milliseconds(40), t0 + milliseconds(50), 0.5);  // free at 60
  share.busy(t0 + milliseconds(50), t0 + milliseconds(70), 0.5);  // free at max(60, 70) + 20
  CHECK(share.pause(t0 + milliseconds(70)) == milliseconds(20));
  detail::device_share whole;
  whole.busy(t0, t0 + milliseconds(10), 1.0); // the whole device: never a pause
  CHECK(whole.pause(t0 + milliseconds(10)) == clock::duration::zero());
  CHECK(&detail::device_share::of("dev#0") == &detail::device_share::of("dev#0")); // one per device
  CHECK(&detail::device_share::of("dev#0") != &detail::device_share::of("dev#1"));
}

TEST_CASE("a background tuning pauses between its measurements to keep within its share of the device, a blocking "
          "tuning never pauses",
          "[tune][serving][background]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  // A twentieth: after each measurement the device is left alone for 19 times its length, so every
  // measurement after the first waits (the next one is dispatched at once, microseconds later).
  opts.background_share = 0.05;
  work_tuner tuner{work_kernel("background_paced"), cost_configs({4, 1, 2}), opts};
  int out = 0;
  tuner(&out, 3000);
  tuner.wait_tuned();
  const tuning_result& r = tuner.tune_now(&out, 3000); // tuned: its result, not a new tuning
  CHECK(r.background.share == 0.05);
  CHECK(r.background.pauses >= 2); // before the second and the third candidates at least
  CHECK(r.background.paused_ms > 0);
  {
    std::lock_guard lock(obs->mutex);
    REQUIRE(obs->replacements.size() == 1);
  }
  // The knob gives the share where the options leave it unset; a blocking tuning has none.
  auto half = knobs().autotuning.background_share.scoped(0.5);
  auto knob_opts = serving_options(obs);
  knob_opts.tuning_args = opts.tuning_args;
  work_tuner by_knob{work_kernel("background_knob"), cost_configs({4, 1}), knob_opts};
  by_knob(&out, 3000);
  by_knob.wait_tuned();
  CHECK(by_knob.tune_now(&out, 3000).background.share == 0.5);
  work_tuner blocking{work_kernel("background_blocking"), cost_configs({4, 1, 2}),
                      {.arg_names = {"out", "n"}, .key = {"n"}, .bench = quick_bench()}};
  const tuning_result& b = blocking.tune_now(&out, 3000);
  CHECK(b.background.share == 0);
  CHECK(b.background.pauses == 0);
  CHECK(b.background.remeasured == 0);
}

namespace {

/// Busy work as work_kernel's, but JITTER=1 makes every other call 8 times longer (a call counter):
/// samples as noisy as a kernel measured beside the program's own work.
const char* jitter_code = R"(
extern "C" void work(int* out, int n) {
  static int calls = 0;
  const int reps = (JITTER && (++calls % 2)) ? 8 : 1;
  volatile int s = 0;
  for (int i = 0; i < n * COST * reps; ++i) s += i;
  out[0] = s;
}
)";

/// The jittering config first, then six steady ones: the tuning's usual spread is theirs, even when a
/// loaded machine preempts one or two of them.
std::vector<config> jitter_configs() {
  std::vector<config> out{config{{"COST", 1}, {"JITTER", 1}}};
  for (int cost : {1, 2, 3, 4, 5, 6}) out.push_back(config{{"COST", cost}, {"JITTER", 0}});
  return out;
}

/// Budgets long enough for tens of samples of a 0.05-0.4 ms call.
bench_options jitter_bench() { return {.warmup_ms = 1.0, .rep_ms = 20.0}; }

} // namespace

TEST_CASE("a background measurement whose samples are noisy is measured again, a blocking tuning measures once",
          "[tune][serving][background]") {
  private_cache cache;
  auto obs = std::make_shared<serving_observer>();
  int spare = 0;
  auto opts = serving_options(obs, spare);
  opts.background_share = 1.0; // no pauses: this test is about the noise
  opts.bench = jitter_bench();
  work_tuner tuner{{.name = "background_jitter", .code = jitter_code, .entry = "work"}, jitter_configs(), opts};
  int out = 0;
  tuner(&out, 200000); // ~0.2 ms a call: far above the clock's noise
  tuner.wait_tuned();
  const tuning_result& r = tuner.tune_now(&out, 200000);
  INFO(r.json());
  // JITTER=1 stays noisy however often it is measured: it is measured again (at each retry where it
  // stands out; on a machine loaded enough, the steady ones spread too), and a bounded number of times.
  CHECK(r.background.remeasured >= 1);
  CHECK(r.background.remeasured <= detail::background_retries * r.candidates.size() +
                                        detail::background_final_repeats * r.candidates.size());
  CHECK(r.background.pauses == 0);
  CHECK(detail::measured_spread(r.candidates[0]) > detail::noisy_spread_floor);

  work_tuner blocking{{.name = "blocking_jitter", .code = jitter_code, .entry = "work"}, jitter_configs(),
                      {.arg_names = {"out", "n"}, .key = {"n"}, .bench = jitter_bench()}};
  const tuning_result& b = blocking.tune_now(&out, 200000);
  CHECK(b.background.remeasured == 0);
  CHECK(b.background.final_repeats == 0);
}

TEST_CASE("noisy_measurements names the candidates whose p20-p80 spread is above the floor and the tuning's usual "
          "spread",
          "[tune][serving][background]") {
  auto measured = [](double median, double p20, double p80) {
    candidate_result r{config{}};
    r.status = candidate_status::ok;
    r.samples = 20;
    r.time = {median, p20, p80};
    r.rsd = 4.5; // one preemption: the rsd says nothing here, the spread does
    return r;
  };
  std::vector<candidate_result> rs{measured(1.0, 0.998, 1.004), measured(2.0, 1.2, 2.8), measured(1.5, 1.497, 1.505),
                                   measured(3.0, 2.99, 3.01)};
  rs.push_back(candidate_result{config{}}); // not measured: never noisy
  CHECK(detail::measured_spread(rs[1]) == Approx(0.8));
  CHECK(detail::noisy_measurements(rs) == std::vector<std::size_t>{1});
  CHECK_FALSE(detail::noisy_finals(rs, {0, 2}, detail::median_spread(rs)));
  CHECK(detail::noisy_finals(rs, {0, 1}, detail::median_spread(rs)));
  // A kernel as noisy as all the others is that kind of kernel, not disturbed.
  std::vector<candidate_result> cpu{measured(1.0, 0.95, 1.05), measured(1.0, 0.94, 1.06), measured(1.0, 0.96, 1.05)};
  CHECK(detail::noisy_measurements(cpu).empty());
}

TEST_CASE("COTUNE_BACKGROUND_SHARE and tune_options::background_share take a share above 0 and at most 1 and refuse "
          "the rest",
          "[tune][serving][background][knobs]") {
  auto& share = knobs().autotuning.background_share;
  {
    cotune_test::scoped_env env("COTUNE_BACKGROUND_SHARE", std::nullopt);
    CHECK(share.get() == 0.1);
  }
  {
    cotune_test::scoped_env env("COTUNE_BACKGROUND_SHARE", std::string("0.25"));
    CHECK(share.get() == 0.25);
    env.set(std::string("1"));
    CHECK(share.get() == 1.0);
    for (const char* bad : {"0", "1.5", "-0.1", "nan", "a tenth"}) {
      INFO(bad);
      env.set(std::string(bad));
      CHECK_THROWS_AS(share.get(), knob_error);
    }
  }
  CHECK_THROWS_WITH(share.scoped(0.0), Catch::Contains("COTUNE_BACKGROUND_SHARE=0"));
  private_cache cache;
  for (double bad : {0.0, -1.0, 2.0}) {
    work_tuner::options o{.arg_names = {"out", "n"}, .key = {"n"}, .first_call = first_call_mode::serve};
    o.background_share = bad;
    CHECK_THROWS_WITH((work_tuner{work_kernel("background_bad"), cost_configs({1}), o}),
                      Catch::Contains("background_share"));
  }
}
