// Tests for search/search_registry.hpp: the built-in strategies by name, a user's strategy
// registered and chosen through COTUNE_SEARCH in a real tuning (host backend, a real compiler), and
// the knob check reading the same registry.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>
#include <cotune/search/search.hpp>

#include "../tune/tuning_fixture.hpp"

using namespace cotune;

namespace {

std::atomic<int> last_sessions{0};

/// A user's strategy: the candidates in reverse order (so a tuning's evaluated set shows who chose).
class reverse_search final : public search_strategy {
  class session final : public search_session {
  public:
    session(const search_space& sp, const search_settings& st, std::size_t depth)
        : search_session(sp, st, default_search_evaluations(sp.size()), depth), next_(sp.size()) {}

  protected:
    std::vector<std::size_t> do_propose(std::size_t want) override {
      std::vector<std::size_t> out;
      while (next_ > 0 && out.size() < want) out.push_back(--next_);
      return out;
    }

  private:
    std::size_t next_;
  };

protected:
  std::unique_ptr<search_session> do_start(const search_space& sp, const search_settings& st,
                                           std::size_t depth) const override {
    ++last_sessions;
    return std::make_unique<session>(sp, st, depth);
  }
  std::string do_name() const override { return "reverse"; }
};

// Registered before main, as a user would.
const bool reverse_registered =
    register_search("reverse", [] { return std::make_shared<reverse_search>(); }, "the candidates backwards");

} // namespace

TEST_CASE("the registry holds the built-in strategies, by the names they report", "[search][registry]") {
  const auto names = search_registry::instance().names();
  for (const char* n : {"exhaustive", "random", "local", "evolution", "bayes", "bayes-local"}) {
    INFO(n);
    REQUIRE(std::find(names.begin(), names.end(), n) != names.end());
    CHECK(search_named(n)->name() == n);
  }
  CHECK(search_named("nope") == nullptr);
  CHECK_THAT(search_registry::instance().describe(), Catch::Contains("bayes-local (") && Catch::Contains("reverse ("));
}

TEST_CASE("a name is registered once, and must be a word", "[search][registry]") {
  REQUIRE(reverse_registered);
  const auto make = [] { return std::make_shared<reverse_search>(); };
  CHECK_THROWS_WITH(register_search("reverse", make), Catch::Contains("'reverse' is registered already"));
  CHECK_THROWS_WITH(register_search("bayes", make), Catch::Contains("'bayes' is registered already"));
  CHECK_THROWS_WITH(register_search("two words", make), Catch::Contains("not a strategy name"));
  CHECK_THROWS_WITH(register_search("", make), Catch::Contains("not a strategy name"));
  CHECK_THROWS_WITH(register_search("nothing", nullptr), Catch::Contains("no factory"));
}

TEST_CASE("the knob check accepts a registered name and lists them all for another", "[search][registry][knobs]") {
  CHECK_NOTHROW(search_knobs().strategy.scoped("reverse"));
  CHECK_THROWS_AS(search_knobs().strategy.scoped("nope"), knob_error);
  CHECK_THROWS_WITH(search_knobs().strategy.scoped("nope"), Catch::Contains("COTUNE_SEARCH=nope") &&
                                                                 Catch::Contains("bayes-local") &&
                                                                 Catch::Contains("reverse"));
  cotune_test::scoped_env env("COTUNE_SEARCH", std::string("nope"));
  CHECK_THROWS_AS(knob_registry::instance().check(), knob_error);
  env.set(std::string("reverse"));
  CHECK_NOTHROW(knob_registry::instance().check());
  CHECK(search_from_knobs()->name() == "reverse");
  CHECK_THAT(search_knobs().strategy.doc(), Catch::Contains("bayes-local"));
}

TEST_CASE("a user's strategy chosen by COTUNE_SEARCH runs a real tuning", "[search][registry][tune]") {
  cotune_test::private_cache cache;
  cotune_test::scoped_env strategy("COTUNE_SEARCH", std::string("reverse"));
  cotune_test::scoped_env budget("COTUNE_SEARCH_BUDGET", std::string("25%"));
  std::vector<config> cs;
  for (int cost : {1, 2, 3, 4, 5, 6, 7, 8}) cs.push_back(config{{"COST", cost}});
  autotuner<void(int*, int)> tuner{cotune_test::work_kernel("registry_reverse"), cs,
                                   {.arg_names = {"out", "n"}, .key = {"n"}, .bench = cotune_test::quick_bench()}};
  const int before = last_sessions.load();
  int out = 0;
  const auto& r = tuner.tune_now(&out, 500);
  CHECK(last_sessions.load() == before + 1);
  // 25% of 8: the last two candidates, the ones the reverse strategy proposes first.
  REQUIRE(r.candidates.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    INFO(i);
    CHECK((r.candidates[i].status == candidate_status::not_evaluated) == (i < 6));
  }
  CHECK((r.winner == 6 || r.winner == 7));
}
