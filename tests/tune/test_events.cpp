// Tests for cotune/tune/events.hpp: tuning events, observers, and what the printing observer writes
// (to a real file, and to a real terminal: a pseudo-terminal).

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cotune/tune/events.hpp>

using namespace cotune;

namespace {

/// A name for each event, through a generic visit: an alternative added later is "other".
std::string describe(const tuning_event& e) {
  return std::visit(
      [](const auto& ev) -> std::string {
        using E = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<E, tuning_started>)
          return "started " + ev.kernel + " [" + ev.key_text + "] " + std::to_string(ev.candidates);
        else if constexpr (std::is_same_v<E, candidate_compiled>)
          return "compiled " + std::to_string(ev.index) + "/" + std::to_string(ev.total) + (ev.from_cache ? " cached" : "");
        else if constexpr (std::is_same_v<E, candidate_failed>)
          return "failed " + std::to_string(ev.index) + " " + std::string(to_string(ev.result->status));
        else if constexpr (std::is_same_v<E, candidate_measured>)
          return "measured " + std::to_string(ev.index);
        else if constexpr (std::is_same_v<E, tuning_selected>)
          return "selected " + ev.result->kernel;
        else if constexpr (std::is_same_v<E, cache_hit>)
          return "cache hit " + ev.layer;
        else if constexpr (std::is_same_v<E, tuning_warning>)
          return "warning " + ev.message;
        else
          return "other";
      },
      e);
}

/// Records what it is told, in order.
class recording_observer final : public observer {
public:
  std::vector<std::string> seen;
  std::vector<const void*> pointers; ///< the config or result each event points at, if any

protected:
  void on_event(const tuning_event& e) override {
    seen.push_back(describe(e));
    pointers.push_back(std::visit(
        [](const auto& ev) -> const void* {
          using E = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<E, candidate_compiled>) return ev.cfg;
          else if constexpr (requires { ev.result; }) return ev.result;
          else return nullptr;
        },
        e));
  }
};

candidate_result candidate(config cfg, candidate_status s, timings t = {inf_ms, inf_ms, inf_ms}, std::string reason = {}) {
  candidate_result c;
  c.cfg = std::move(cfg);
  c.status = s;
  c.time = t;
  c.reason = std::move(reason);
  return c;
}

/// saxpy over n = 1024: candidate 1 wins (0.11 ms in the screening, 0.125 ms in the finals), candidate 0
/// does not compile, candidate 2 was only screened.
tuning_result saxpy_result() {
  tuning_result r;
  r.kernel = "saxpy";
  r.key_text = "n: 1024, x: float32";
  r.candidates.push_back(candidate(config{{"BLOCK", 32}}, candidate_status::compile_error, {inf_ms, inf_ms, inf_ms},
                                   "saxpy.cpp:4:7: error: use of undeclared identifier 'BLOCK_SIZE'\nint i = BLOCK_SIZE;\n      ^"));
  r.candidates.push_back(candidate(config{{"BLOCK", 64}}, candidate_status::ok, {0.125, 0.12, 0.13}));
  r.candidates.back().screen_ms = 0.11;
  r.candidates.push_back(candidate(config{{"BLOCK", 128}}, candidate_status::ok, {0.25, 0.2, 0.3}));
  r.candidates.back().screened_only = true;
  r.candidates.push_back(candidate(config{{"BLOCK", 256}}, candidate_status::not_run));
  r.winner = 1;
  r.wall_ms = 2500;
  return r;
}

/// A real temporary file, read back whole.
class temp_file {
public:
  temp_file() : f_(std::tmpfile()) { REQUIRE(f_); }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  ~temp_file() { std::fclose(f_); }
  [[nodiscard]] std::FILE* get() const noexcept { return f_; }
  [[nodiscard]] std::string text() const {
    std::fflush(f_);
    std::rewind(f_);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) out.append(buf, n);
    return out;
  }

private:
  std::FILE* f_;
};

/// A pseudo-terminal: the program writes to `terminal()`, the test reads what a user would see.
class pseudo_terminal {
public:
  pseudo_terminal() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(master_ >= 0);
    REQUIRE(::grantpt(master_) == 0);
    REQUIRE(::unlockpt(master_) == 0);
    const char* name = ::ptsname(master_);
    REQUIRE(name);
    int slave = ::open(name, O_RDWR | O_NOCTTY);
    REQUIRE(slave >= 0);
    terminal_ = ::fdopen(slave, "w");
    REQUIRE(terminal_);
  }
  pseudo_terminal(const pseudo_terminal&) = delete;
  pseudo_terminal& operator=(const pseudo_terminal&) = delete;
  ~pseudo_terminal() {
    std::fclose(terminal_);
    ::close(master_);
  }
  [[nodiscard]] std::FILE* terminal() const noexcept { return terminal_; }
  /// Reads what was written until `until` appears (or nothing comes for a long while).
  [[nodiscard]] std::string read_until(const std::string& until) {
    while (seen_.find(until) == std::string::npos) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 30000) <= 0) break; // nothing for 30 s: give up, the checks will say what is missing
      char buf[4096];
      ssize_t n = ::read(master_, buf, sizeof buf);
      if (n <= 0) break;
      seen_.append(buf, static_cast<std::size_t>(n));
    }
    return seen_;
  }

private:
  int master_ = -1;
  std::FILE* terminal_ = nullptr;
  std::string seen_;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

} // namespace

TEST_CASE("an observer receives the events it is notified of, in order, pointing at the originals", "[tune][events]") {
  const auto r = saxpy_result();
  recording_observer obs;
  const std::vector<tuning_event> events{
      tuning_started{.kernel = "saxpy", .key_text = "n: 1024", .candidates = 4, .devices = 1},
      candidate_compiled{.kernel = "saxpy", .key_text = "n: 1024", .index = 1, .total = 4, .cfg = &r.candidates[1].cfg,
                         .compile_ms = 12, .from_cache = true},
      candidate_failed{.kernel = "saxpy", .key_text = "n: 1024", .index = 0, .total = 4, .result = &r.candidates[0]},
      candidate_measured{.kernel = "saxpy", .key_text = "n: 1024", .index = 1, .total = 4, .result = &r.candidates[1]},
      tuning_selected{.result = &r},
      cache_hit{.kernel = "saxpy", .key_text = "n: 2048", .layer = "file"},
  };
  observer& base = obs;
  for (const auto& e : events) base.notify(e);
  CHECK(obs.seen == std::vector<std::string>{"started saxpy [n: 1024] 4", "compiled 1/4 cached", "failed 0 compile error",
                                             "measured 1", "selected saxpy", "cache hit file"});
  CHECK(obs.pointers == std::vector<const void*>{nullptr, &r.candidates[1].cfg, &r.candidates[0], &r.candidates[1], &r,
                                                  nullptr});
}

TEST_CASE("observers are shared and destroyed through the base class", "[tune][events]") {
  std::vector<std::shared_ptr<observer>> observers{std::make_shared<recording_observer>(),
                                                   std::make_shared<printing_observer>(stderr, false, false)};
  for (const auto& o : observers) o->notify(cache_hit{.kernel = "k", .key_text = "", .layer = "remote"});
  CHECK(static_cast<recording_observer&>(*observers[0]).seen == std::vector<std::string>{"cache hit remote"});
  static_assert(std::has_virtual_destructor_v<observer>);
  static_assert(std::is_abstract_v<observer>);
}

TEST_CASE("the summary names the kernel, the key, the time, the best config and each failure", "[tune][events]") {
  const auto r = saxpy_result();
  temp_file out;
  printing_observer printer(out.get(), true, true); // a file is no terminal: no progress line
  printer.notify(tuning_started{.kernel = "saxpy", .key_text = r.key_text, .candidates = 4, .devices = 1});
  printer.notify(candidate_failed{.kernel = "saxpy", .key_text = r.key_text, .index = 0, .total = 4, .result = &r.candidates[0]});
  printer.notify(candidate_measured{.kernel = "saxpy", .key_text = r.key_text, .index = 1, .total = 4, .result = &r.candidates[1]});
  printer.notify(tuning_selected{.result = &r});
  const std::string text = out.text();
  CHECK_THAT(text, Catch::StartsWith("cotune autotuning for kernel saxpy,\n"
                                     "with key as (n: 1024, x: float32),\n"
                                     "finished after 2.50s,\n"
                                     "best config selected: BLOCK: 64, num_warps: 4, num_stages: 3, num_ctas: 1;\n"));
  // The table: a row per candidate with its status and timings; the failure's first line under it.
  CHECK_THAT(text, Catch::Contains("config"));
  // After screening: each row's screening median (comparable down the column), the finals beside it.
  CHECK_THAT(text, Catch::Matches("[\\s\\S]*\\n +# +config +status +screen ms +final ms +p20 ms +p80 ms\\n[\\s\\S]*"));
  CHECK_THAT(text, Catch::Matches("[\\s\\S]*\\n +0  BLOCK: 32 +compile error +- +- +- +-\\n"
                                  " +saxpy\\.cpp:4:7: error: use of undeclared identifier 'BLOCK_SIZE'\\n[\\s\\S]*"));
  CHECK_THAT(text, Catch::Matches("[\\s\\S]*\\n +1  BLOCK: 64 +\\* best +0\\.1100 +0\\.1250 +0\\.1200 +0\\.1300\\n[\\s\\S]*"));
  CHECK_THAT(text, Catch::Matches("[\\s\\S]*\\n +2  BLOCK: 128 +ok \\(screened\\) +0\\.2500 +- +- +-\\n[\\s\\S]*"));
  CHECK_THAT(text, Catch::Matches("[\\s\\S]*\\n +3  BLOCK: 256 +not run +- +- +- +-\\n  \\(screen ms: [\\s\\S]*"));
  // The footnote says which column is which.
  CHECK_THAT(text, Catch::Contains("screen ms: every candidate's median in the short screening pass") &&
                       Catch::Contains("final ms, p20, p80: the finalists' full-budget finals"));
  // Only the first line of a failure, and no progress line or terminal control on a file.
  CHECK_THAT(text, !Catch::Contains("int i = BLOCK_SIZE"));
  CHECK_THAT(text, !Catch::Contains("\r"));
  CHECK_THAT(text, !Catch::Contains("\033"));
  CHECK_THAT(text, !Catch::Contains("candidates"));
}

TEST_CASE("a cache hit is one line naming its layer, with no summary or table (Triton's rule)", "[tune][events]") {
  auto r = saxpy_result();
  r.from_cache = true;
  r.wall_ms = 3;
  temp_file out;
  printing_observer printer(out.get());
  recording_observer seen;
  for (observer* o : {static_cast<observer*>(&printer), static_cast<observer*>(&seen)}) {
    o->notify(cache_hit{.kernel = "saxpy", .key_text = r.key_text, .layer = "remote"});
    o->notify(cache_hit{.kernel = "saxpy", .key_text = r.key_text, .layer = "shipped tuning database"});
    o->notify(tuning_selected{.result = &r});
  }
  CHECK(out.text() == "cotune: saxpy [n: 1024, x: float32]: tuning result from the remote cache\n"
                      "cotune: saxpy [n: 1024, x: float32]: tuning result from the shipped tuning database\n");
  // The events still reach every observer.
  CHECK(seen.seen == std::vector<std::string>{"cache hit remote", "cache hit shipped tuning database", "selected saxpy"});
}

TEST_CASE("without screening, the table has one median column and no footnote", "[tune][events]") {
  tuning_result r;
  r.kernel = "k";
  r.launch_options = false;
  r.candidates.push_back(candidate(config{{"B", 1}}, candidate_status::ok, {1, 0.9, 1.1}));
  r.candidates.push_back(candidate(config{{"B", 2}}, candidate_status::ok, {2, 1.9, 2.1}));
  temp_file out;
  printing_observer::print_table(out.get(), r);
  const std::string text = out.text();
  CHECK_THAT(text, Catch::Matches(" +# +config +status +median ms +p20 ms +p80 ms\n"
                                  " +0  B: 1 +\\* best +1\\.0000 +0\\.9000 +1\\.1000\n"
                                  " +1  B: 2 +ok +2\\.0000 +1\\.9000 +2\\.1000\n"));
}

TEST_CASE("without the summary, a printer writes nothing to a file", "[tune][events]") {
  const auto r = saxpy_result();
  temp_file out;
  printing_observer printer(out.get(), false, true);
  printer.notify(tuning_started{.kernel = "saxpy", .key_text = r.key_text, .candidates = 4, .devices = 1});
  printer.notify(candidate_compiled{.kernel = "saxpy", .key_text = r.key_text, .index = 1, .total = 4, .cfg = &r.candidates[1].cfg});
  printer.notify(candidate_measured{.kernel = "saxpy", .key_text = r.key_text, .index = 1, .total = 4, .result = &r.candidates[1]});
  printer.notify(cache_hit{.kernel = "saxpy", .key_text = r.key_text, .layer = "file"});
  printer.notify(tuning_selected{.result = &r});
  CHECK(out.text().empty());
}

TEST_CASE("a warning is printed whatever the printer was asked for, and reaches observers", "[tune][events]") {
  for (bool summary : {false, true}) {
    temp_file out;
    printing_observer printer(out.get(), summary, false);
    printer.notify(tuning_warning{.kernel = "saxpy", .message = "could not store the tuning result: disk full"});
    CHECK(out.text() == "cotune: warning: saxpy: could not store the tuning result: disk full\n");
  }
  recording_observer seen;
  seen.notify(tuning_warning{.kernel = "saxpy", .message = "the tuning-result cache is unusable"});
  REQUIRE(seen.seen.size() == 1);
  CHECK(seen.seen[0] == "warning the tuning-result cache is unusable");
}

TEST_CASE("on a terminal, a progress line counts finished candidates and is erased at the end", "[tune][events]") {
  const auto r = saxpy_result();
  pseudo_terminal tty;
  printing_observer printer(tty.terminal(), true, true);
  printer.notify(tuning_started{.kernel = "saxpy", .key_text = "n: 1024", .candidates = 4, .devices = 1});
  printer.notify(candidate_compiled{.kernel = "saxpy", .key_text = "n: 1024", .index = 1, .total = 4, .cfg = &r.candidates[1].cfg});
  printer.notify(candidate_failed{.kernel = "saxpy", .key_text = "n: 1024", .index = 0, .total = 4, .result = &r.candidates[0]});
  printer.notify(candidate_measured{.kernel = "saxpy", .key_text = "n: 1024", .index = 1, .total = 4, .result = &r.candidates[1]});
  printer.notify(candidate_measured{.kernel = "saxpy", .key_text = "n: 1024", .index = 2, .total = 4, .result = &r.candidates[2]});
  printer.notify(tuning_selected{.result = &r}); // flushes
  const std::string seen = tty.read_until("not run");
  CHECK_THAT(seen, Catch::StartsWith("\rcotune: tuning saxpy [n: 1024]: 0/4 candidates"
                                     "\rcotune: tuning saxpy [n: 1024]: 1/4 candidates"
                                     "\rcotune: tuning saxpy [n: 1024]: 2/4 candidates"
                                     "\rcotune: tuning saxpy [n: 1024]: 3/4 candidates"
                                     "\r\033[Kcotune autotuning for kernel saxpy,"));
  CHECK_THAT(seen, Catch::Contains("* best"));
  // A second tuning counts from 0 again.
  printer.notify(tuning_started{.kernel = "axpby", .key_text = "n: 8", .candidates = 2, .devices = 1});
  printer.notify(candidate_measured{.kernel = "axpby", .key_text = "n: 8", .index = 0, .total = 2, .result = &r.candidates[1]});
  printer.notify(tuning_selected{.result = &r});
  const std::string again = tty.read_until("axpby [n: 8]: 1/2");
  CHECK_THAT(again, Catch::Contains("\rcotune: tuning axpby [n: 8]: 0/2 candidates\rcotune: tuning axpby [n: 8]: 1/2 candidates"));
}

TEST_CASE("the table shows launch options only when candidates differ in them", "[tune][events]") {
  tuning_result r;
  r.kernel = "k";
  r.candidates.push_back(candidate(config{{"B", 1}}, candidate_status::ok, {1, 1, 1}));
  r.candidates.push_back(candidate(config{{"B", 2}}, candidate_status::ok, {2, 2, 2}));
  r.candidates.back().cfg.with_pre_hook("zero_out", {});
  {
    temp_file out;
    printing_observer::print_table(out.get(), r);
    const std::string text = out.text();
    CHECK_THAT(text, Catch::Contains("  B: 1  "));
    CHECK_THAT(text, Catch::Contains("  B: 2, pre_hook: zero_out  "));
    CHECK_THAT(text, !Catch::Contains("num_warps"));
  }
  r.candidates[1].cfg.with_launch(launch_options{.num_warps = 8});
  {
    temp_file out;
    printing_observer::print_table(out.get(), r);
    const std::string text = out.text();
    CHECK_THAT(text, Catch::Contains("B: 1, num_warps: 4, num_stages: 3, num_ctas: 1  "));
    CHECK_THAT(text, Catch::Contains("B: 2, num_warps: 8, num_stages: 3, num_ctas: 1, pre_hook: zero_out"));
  }
}

TEST_CASE("the table cuts long configs at 100 characters and failures at 160", "[tune][events]") {
  tuning_result r;
  r.kernel = "k";
  std::string long_name(150, 'P');
  r.candidates.push_back(candidate(config{{long_name, 1}}, candidate_status::ok, {1, 1, 1}));
  r.candidates.push_back(candidate(config{{"B", 2}}, candidate_status::launch_error, {inf_ms, inf_ms, inf_ms},
                                   std::string(300, 'e') + "\nsecond line"));
  temp_file out;
  printing_observer::print_table(out.get(), r);
  const std::string text = out.text();
  CHECK_THAT(text, Catch::Contains(std::string(100, 'P')));
  CHECK_THAT(text, !Catch::Contains(std::string(101, 'P')));
  CHECK_THAT(text, Catch::Contains(" " + std::string(160, 'e') + "\n"));
  CHECK_THAT(text, !Catch::Contains(std::string(161, 'e')));
  CHECK_THAT(text, !Catch::Contains("second line"));
  CHECK_THAT(text, Catch::Contains("launch error"));
}

TEST_CASE("summaries from several threads at once are printed whole", "[tune][events]") {
  constexpr int threads = 4, per_thread = 25;
  std::vector<tuning_result> results(threads);
  for (int t = 0; t < threads; ++t) {
    results[t].kernel = "kernel_" + std::to_string(t);
    results[t].key_text = "key_" + std::to_string(t);
    for (int b = 0; b < 3; ++b)
      results[t].candidates.push_back(candidate(config{{"T", t}, {"B", b}}, candidate_status::ok, {1.0 + b, 1, 1}));
  }
  temp_file out;
  printing_observer printer(out.get());
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) printer.notify(tuning_selected{.result = &results[t]});
    });
  for (auto& w : workers) w.join();
  const std::string text = out.text();
  CHECK(count(text, "cotune autotuning for kernel ") == static_cast<std::size_t>(threads * per_thread));
  // Every table row belongs to the summary above it.
  std::size_t rows = 0, foreign = 0;
  std::string current;
  for (std::size_t pos = 0, end; pos < text.size(); pos = end + 1) {
    end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (line.starts_with("cotune autotuning for kernel kernel_")) current = line.substr(36, 1);
    else if (auto t = line.find("T: "); line.starts_with("  ") && t != std::string::npos) {
      ++rows;
      if (line.substr(t + 3, 1) != current) ++foreign;
    }
  }
  CHECK(rows == static_cast<std::size_t>(threads * per_thread * 3));
  CHECK(foreign == 0);
}
