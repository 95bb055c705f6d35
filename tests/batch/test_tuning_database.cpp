// Tuning databases: round trip, checksum, signature, diff, import into a cache, and what an
// application's tuner gets from the shipped database.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/prediction.hpp>
#include <cotune/batch/shipped_database.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/knobs/knobs.hpp>

#include "../support/temp_dir.hpp"

namespace cj = cotune::batch;

namespace {
cotune::tuning_result result(std::string key, int winner_block, double ms) {
  cotune::tuning_result r;
  r.kernel = "gemm";
  r.key_text = "instance: " + key;
  for (int block : {16, 32}) {
    cotune::candidate_result c{cotune::config{{"BLOCK", block}}};
    c.status = cotune::candidate_status::ok;
    c.time = block == winner_block ? cotune::timings{ms, ms * 0.9, ms * 1.1} : cotune::timings{ms * 2, ms * 1.9, ms * 2.1};
    r.candidates.push_back(c);
  }
  r.winner = winner_block == 16 ? 0 : 1;
  r.made = cotune::provenance{"node1", "host (test cpu)", "2026-11-30T00:00:00Z", "0.1.0"};
  return r;
}
} // namespace

TEST_CASE("a database reads back what was written, and refuses an edited one", "[job][tuning_database]") {
  cj::tuning_database db;
  db.add(cj::database_entry::from(result("n=64", 16, 0.5), "fp1"));
  db.add(cj::database_entry::from(result("n=128", 32, 1.5), "fp1"));
  db.add(cj::database_entry::from(result("n=64", 32, 0.4), "fp1")); // replaces the first
  REQUIRE(db.size() == 2);
  const auto text = db.json();
  const auto back = cj::tuning_database::from_json(text, "", "db.json");
  REQUIRE(back.size() == 2);
  const auto* e = back.find("gemm", "n=64", "host (test cpu)");
  REQUIRE(e);
  CHECK(e->winner == cotune::config{{"BLOCK", 32}});
  CHECK(e->time[0] == 0.4);
  CHECK(e->fingerprint == "fp1");
  REQUIRE(e->detail);
  CHECK(e->detail->candidates.size() == 2);
  CHECK_FALSE(back.was_signed());
  std::string edited = text;
  edited.replace(edited.find("\"BLOCK\": 32"), 11, "\"BLOCK\": 64");
  CHECK_THROWS_WITH(cj::tuning_database::from_json(edited, "", "db.json"),
                    Catch::Contains("db.json: the database's checksum does not match"));
  // A syntax error is located (a database may hold Python's Infinity: that is not the error).
  std::string broken = text;
  broken.insert(broken.rfind('}'), ",");
  broken.replace(broken.find("0.4"), 3, "Infinity");
  CHECK_THROWS_WITH(
      cj::tuning_database::from_json(broken, "", "db.json"),
      Catch::Matches("db\\.json:[0-9]+:[0-9]+: not a tuning database \\(not valid JSON: expected a member "
                     "name after ',' \\(JSON allows no trailing comma\\), found '\\}'\\)"));
}

TEST_CASE("with a secret, only databases signed with it are read", "[job][tuning_database]") {
  cj::tuning_database db;
  db.add(cj::database_entry::from(result("n=64", 16, 0.5)));
  const auto signed_text = db.json("s3cret");
  CHECK(cj::tuning_database::from_json(signed_text, "s3cret", "db.json").was_signed());
  CHECK_THROWS_WITH(cj::tuning_database::from_json(signed_text, "other", "db.json"),
                    Catch::Contains("signature does not match"));
  CHECK_THROWS_WITH(cj::tuning_database::from_json(db.json(), "s3cret", "db.json"),
                    Catch::Contains("not signed") && Catch::Contains("COTUNE_TUNING_DB_SECRET"));
}

TEST_CASE("diff tells added, removed, changed and unchanged winners apart", "[job][tuning_database]") {
  cj::tuning_database a, b;
  a.add(cj::database_entry::from(result("n=1", 16, 1)));
  a.add(cj::database_entry::from(result("n=2", 16, 1)));
  a.add(cj::database_entry::from(result("n=3", 16, 1)));
  b.add(cj::database_entry::from(result("n=2", 16, 2))); // same winner, another time
  b.add(cj::database_entry::from(result("n=3", 32, 2))); // another winner, twice as slow: beyond the noise
  b.add(cj::database_entry::from(result("n=4", 16, 1)));
  using k = cj::database_change::kind;
  std::vector<k> kinds;
  for (const auto& c : cj::diff(a, b)) kinds.push_back(c.what);
  CHECK(kinds == std::vector<k>{k::removed, k::same, k::changed, k::added});
}

TEST_CASE("another winner within the measured noise or the tolerance is tied, not changed", "[job][tuning_database]") {
  cj::tuning_database a, b;
  a.add(cj::database_entry::from(result("n=1", 16, 1.0)));  // bands: [0.9, 1.1]
  a.add(cj::database_entry::from(result("n=2", 16, 1.0)));
  b.add(cj::database_entry::from(result("n=1", 32, 1.05))); // [0.945, 1.155]: overlaps, the same time twice
  b.add(cj::database_entry::from(result("n=2", 32, 1.3)));  // [1.17, 1.43]: 30% slower, clear of the noise
  using k = cj::database_change::kind;
  auto kinds = [&](double tolerance) {
    std::vector<k> out;
    for (const auto& c : cj::diff(a, b, tolerance)) out.push_back(c.what);
    return out;
  };
  CHECK(kinds(0) == std::vector<k>{k::tied, k::changed});
  CHECK(kinds(0.29) == std::vector<k>{k::tied, k::changed});
  CHECK(kinds(0.31) == std::vector<k>{k::tied, k::tied});
  // Without a band (a failed or unknown time) nothing ties.
  auto unknown = cj::database_entry::from(result("n=3", 16, 1.0));
  unknown.time = {cotune::inf_ms, cotune::inf_ms, cotune::inf_ms};
  CHECK_FALSE(cj::within_noise(unknown, *b.find("gemm", "n=1", "host (test cpu)"), 10.0));
}

TEST_CASE("a host backend's entry keeps its winner without launch options, and its digest", "[job][tuning_database]") {
  auto host = result("n=64", 16, 0.5);
  host.launch_options = false;
  cj::tuning_database db;
  db.add(cj::database_entry::from(host));
  db.add(cj::database_entry::from(result("n=128", 16, 0.5))); // a GPU backend's (launch options by default)
  const auto back = cj::tuning_database::from_json(db.json(), "", "db.json");
  const auto* e = back.find("gemm", "n=64", "host (test cpu)");
  REQUIRE(e);
  CHECK_FALSE(e->launch_options);
  CHECK(e->winner_text() == "BLOCK: 16");
  const auto* gpu = back.find("gemm", "n=128", "host (test cpu)");
  REQUIRE(gpu);
  CHECK(gpu->launch_options);
  CHECK_THAT(gpu->winner_text(), Catch::Contains("num_warps: 4"));
  // The flag is covered by the checksum: flipping it is an edit.
  std::string edited = db.json();
  edited.replace(edited.find("\"launch_options\": false"), 23, "\"launch_options\": true ");
  CHECK_THROWS_WITH(cj::tuning_database::from_json(edited, "", "db.json"), Catch::Contains("checksum does not match"));
}

TEST_CASE("an application finds shipped winners in COTUNE_TUNING_DB and in the cache's imported database",
          "[job][tuning_database][shipped_database]") {
  cotune_test::temp_dir dir;
  auto cache = cotune::knobs().cache.dir.scoped((dir / "cache").string());
  cj::tuning_database shipped, imported;
  shipped.add(cj::database_entry::from(result("n=64", 32, 0.5)));
  imported.add(cj::database_entry::from(result("n=128", 16, 0.5)));
  shipped.save(dir / "shipped.db.json");
  CHECK(cj::import_database(dir / "cache", imported) == 1);
  auto path = cj::job_knobs().database.scoped((dir / "shipped.db.json").string());

  const auto hit = cj::find_winner("gemm", "n=64", "host (test cpu)");
  REQUIRE(hit);
  CHECK(hit->winner == cotune::config{{"BLOCK", 32}});
  CHECK(cj::find_winner("gemm", "n=128", "host (test cpu)"));
  CHECK_FALSE(cj::find_winner("gemm", "n=64", "another device"));
  CHECK_FALSE(cj::find_winner("gemm", "n=256", "host (test cpu)"));

  const std::vector<cotune::config> candidates{cotune::config{{"BLOCK", 16}}, cotune::config{{"BLOCK", 32}}};
  const auto r = cj::database_result(*hit, candidates, "n=64");
  REQUIRE(r);
  CHECK(r->winner == 1);
  CHECK(r->best() == candidates[1]);
  CHECK(r->candidates[0].status == cotune::candidate_status::not_run);
  CHECK_FALSE(cj::database_result(*hit, {cotune::config{{"BLOCK", 8}}}, "n=64"));

  auto secret = cj::job_knobs().secret.scoped("s3cret");
  CHECK_THROWS_WITH(cj::find_winner("gemm", "n=64", "host (test cpu)"), Catch::Contains("not signed"));
}

TEST_CASE("a tuner launches the shipped winner of a known key without tuning", "[job][tuning_database][shipped_database]") {
  cotune_test::temp_dir dir;
  const std::vector<cotune::config> configs{cotune::config{{"COST", 4}}, cotune::config{{"COST", 1}},
                                            cotune::config{{"COST", 2}}};
  const cotune::kernel_source kernel{.name = "shipped_work",
                                     .code = "extern \"C\" void work(int* out, int n) { volatile int s = 0; "
                                             "for (int i = 0; i < n * COST; ++i) s += i; out[0] = s; }\n",
                                     .entry = "work"};
  using tuner_t = cotune::autotuner<void(int*, int)>;
  const cotune::tune_options<int*, int> opts{.arg_names = {"out", "n"}, .key = {"n"},
                                             .bench = cotune::bench_options{.warmup_ms = 1, .rep_ms = 5}};
  // Where the database is made: a real tuning, exported.
  cj::tuning_database db;
  {
    auto cache = cotune::knobs().cache.dir.scoped((dir / "maker").string());
    tuner_t maker{kernel, configs, opts};
    int out = 0;
    db.add(cj::database_entry::from(maker.tune_now(&out, 300)));
  }
  // Pretend the shipped winner is the slowest config, so that adopting it cannot be mistaken for tuning.
  cj::tuning_database shipped;
  {
    const auto* found = db.find("shipped_work", "n=300", cotune::host_backend{}.device_name({}));
    REQUIRE(found);
    auto e = *found;
    e.winner = configs[0];
    shipped.add(e);
  }
  shipped.save(dir / "app.db.json");
  // Where it is used: an empty cache, the database named by COTUNE_TUNING_DB.
  auto cache = cotune::knobs().cache.dir.scoped((dir / "app").string());
  auto path = cj::job_knobs().database.scoped((dir / "app.db.json").string());
  tuner_t app{kernel, configs, opts};
  int out = 0;
  app(&out, 300);
  CHECK(app.measured_tunings() == 0);
  CHECK(app.cached_tunings() == 1);
  REQUIRE(app.best_config(&out, 300));
  CHECK(*app.best_config(&out, 300) == configs[0]);
  CHECK(out == 1200 * 1199 / 2); // COST 4 ran
  app(&out, 301); // a key the database does not know: tuned
  CHECK(app.measured_tunings() == 1);
}

namespace {
/// A key of a kernel whose best BLOCK grows with n (1 at n=64, doubling every other doubling of n),
/// with every candidate's time: 1 ms at the best BLOCK, 0.3 ms more per halving or doubling away.
cj::database_entry smooth_entry(int n, std::string device = "dev A") {
  const double best = std::floor(std::log2(n / 64.0) / 2.0); // log2 of the best BLOCK
  cotune::tuning_result r;
  r.kernel = "smooth";
  r.key_text = fmt::format("x: float32[{}], n={}", n, n);
  for (int b = 0; b < 4; ++b) {
    cotune::candidate_result c{cotune::config{{"BLOCK", 1 << b}}};
    c.status = cotune::candidate_status::ok;
    const double ms = 1.0 + 0.3 * std::fabs(b - best);
    c.time = {ms, ms, ms};
    if (b == static_cast<int>(std::min(best, 3.0))) r.winner = r.candidates.size();
    r.candidates.push_back(c);
  }
  r.made = cotune::provenance{"node1", device, "2026-12-04T00:00:00Z", "0.1.0"};
  auto e = cj::database_entry::from(r);
  e.device = std::move(device);
  return e;
}
} // namespace

TEST_CASE("a key nobody tuned is predicted from the nearest key of its shape, kernel and device, and held-out keys "
          "measure the predictions' regret",
          "[job][tuning_database][prediction]") {
  cj::tuning_database db;
  for (int n : {64, 128, 256, 512, 1024, 2048, 4096}) db.add(smooth_entry(n));
  db.add(smooth_entry(3000, "dev B")); // another device: never a neighbour of dev A's keys
  auto other = smooth_entry(1500);
  other.key = "x: float16[1500], n=1500"; // another element type: another shape
  other.winner = cotune::config{{"BLOCK", 8}};
  db.add(other);

  const auto p = cj::predict_winner(db, "smooth", "x: float32[3000], n=3000", "dev A");
  REQUIRE(p);
  CHECK(p->neighbour == "x: float32[4096], n=4096"); // log2: 0.45 away, against 0.55 for 2048
  CHECK(p->winner == cotune::config{{"BLOCK", 8}});
  CHECK(p->distance > 0);
  CHECK(cj::predict_winner(db, "smooth", "x: float32[64], n=64", "dev A")->distance == 0); // held: itself
  CHECK_FALSE(cj::predict_winner(db, "smooth", "x: float64[64], n=64", "dev A")); // no key of that shape
  CHECK_FALSE(cj::predict_winner(db, "other", "x: float32[64], n=64", "dev A"));
  CHECK(cj::predict_winner(db, "smooth", "x: float16[1400], n=1400", "dev A")->winner == cotune::config{{"BLOCK", 8}});

  // Leave one out: dev A's float32 keys predicted from their neighbours (the others have none).
  const auto held = cj::held_out_regret(db);
  REQUIRE(held.size() == 7);
  for (const auto& h : held) {
    INFO(h.key << ": tuned " << h.tuned.text() << ", predicted " << h.predicted.text() << " from " << h.neighbour);
    CHECK(h.device == "dev A");
    REQUIRE(h.regret);
    // A neighbour one doubling away picks BLOCK at most one step off: 0.3 ms on 1 ms.
    CHECK(*h.regret <= 0.3 + 1e-9);
    CHECK((*h.regret == 0) == (h.predicted == h.tuned));
  }
}
