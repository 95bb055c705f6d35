// Tests for cotune/cache/cache_inventory.hpp: a real cache directory, real files, real damage, and
// real processes: 200 writers killed with kill -9 mid-write, and a process holding an entry it loaded.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/hashing.hpp>

#include "../support/processes.hpp"
#include "../support/temp_dir.hpp"

using cotune::cache_error;
using cotune::cache_file_status;
using cotune::cache_inventory;
using cotune::file_cache;
using cotune_test::temp_dir;
namespace fs = std::filesystem;

namespace {

const std::string key_a = cotune::detail::sha256_hex("a"), key_b = cotune::detail::sha256_hex("b");

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::size_t temporaries_under(const fs::path& root) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().starts_with(".tmp.")) ++n;
  return n;
}

/// A writer in another process: it starts a real cache write (the file cache's own temporary-file
/// writer, under its lock), writes half, says so on `ready`, and then either waits to be killed or,
/// when a byte arrives on `go`, finishes and commits.
pid_t start_writer(const fs::path& root, const std::string& key, int ready, int go) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int rc = 1;
  try {
    const file_cache c(root, key);
    const auto root_fd = cotune::detail::open_dir(root);
    const auto dir = cotune::detail::make_dir_at(root_fd.get(), c.dir().filename().string(), c.dir());
    cotune::detail::temp_file_writer w(dir.get(), "entry.bin", c.dir());
    w.write(std::string(4096, 'h'));
    char byte = 'r';
    if (::write(ready, &byte, 1) == 1 && ::read(go, &byte, 1) == 1) {
      w.write(std::string(4096, 'h'));
      w.commit();
      rc = 0;
    }
  } catch (...) {
  }
  ::_exit(rc);
}

cache_file_status status_of(const std::vector<cotune::cache_file>& files, const std::string& name) {
  for (const auto& f : files)
    if (f.file == name) return f.status;
  FAIL("no file " << name);
  return cache_file_status::foreign;
}

} // namespace

TEST_CASE("an inventory checks every file the way readers do, in a directory it is given", "[cache][cache_inventory]") {
  temp_dir root;
  const std::string knob_before = cotune::knobs().cache.dir.get();
  file_cache a(root.path(), key_a), b(root.path(), key_b);
  const auto good = a.put("payload a", "k.autotune.json");
  a.put("binary", "k.so");
  const auto damaged = b.put("payload b", "k.autotune.json");
  { // flip one byte of the payload: the frame no longer checks out
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.put('P');
  }
  write(a.dir() / ".tmp.k.so.12345", "half written");
  write(root.path() / "README", "not cotune's");
  fs::create_directory(root.path() / "not-a-key");
  write(root.path() / "not-a-key" / "x", "?");
  fs::create_symlink(good, b.dir() / "link.json");

  const cache_inventory inv{root.path()};
  CHECK(inv.exists());
  const auto files = inv.files([](const cotune::cache_file& f, std::string_view payload) {
    return f.file.ends_with(".json") ? "says: " + std::string(payload) : std::string();
  });
  CHECK(cotune::knobs().cache.dir.get() == knob_before); // no knob was touched to look elsewhere
  CHECK(status_of(files, "k.so") == cache_file_status::valid);
  CHECK(status_of(files, ".tmp.k.so.12345") == cache_file_status::temporary);
  CHECK(status_of(files, "README") == cache_file_status::foreign);
  CHECK(status_of(files, "x") == cache_file_status::foreign);
  CHECK(status_of(files, "link.json") == cache_file_status::foreign);
  std::size_t valid_results = 0, corrupt_results = 0;
  for (const auto& f : files)
    if (f.file == "k.autotune.json") {
      if (f.status == cache_file_status::valid) {
        ++valid_results;
        CHECK(f.note == "says: payload a");
      } else {
        ++corrupt_results;
        CHECK(f.status == cache_file_status::corrupt);
        CHECK_THAT(f.note, Catch::Contains("does not check out"));
      }
    }
  CHECK(valid_results == 1);
  CHECK(corrupt_results == 1);
  const auto t = cache_inventory::totals(files);
  CHECK(t.keys == 2);
  CHECK(t.valid == 2);
  CHECK(t.corrupt == 1);
  CHECK(t.temporary == 1);
  CHECK(t.foreign == 3);
}

TEST_CASE("clear removes only key directories and refuses anything else", "[cache][cache_inventory]") {
  temp_dir root;
  file_cache(root.path(), key_a).put("a", "x.json");
  file_cache(root.path(), key_b).put("b", "y.json");
  write(root.path() / "notes.txt", "mine");
  fs::create_directory(root.path() / "project");
  const cache_inventory inv{root.path()};
  auto plan = inv.plan_clear();
  CHECK(plan.key_dirs.size() == 2);
  CHECK(plan.left_alone == 2);
  CHECK(plan.bytes > 0);
  auto forged = plan;
  forged.key_dirs.push_back(root.path() / "project");
  CHECK_THROWS_AS(inv.clear(forged), cache_error);
  CHECK(fs::exists(root.path() / "project"));
  inv.clear(inv.plan_clear());
  CHECK(fs::exists(root.path() / "notes.txt"));
  CHECK(fs::exists(root.path() / "project"));
  CHECK(cache_inventory::totals(inv.files()).keys == 0);
}

TEST_CASE("read_entry verifies a framed entry in place and refuses one that was moved", "[cache][cache_inventory]") {
  temp_dir root;
  const auto path = file_cache(root.path(), key_a).put(R"({"x": 1})", "r.autotune.json");
  auto e = cache_inventory::read_entry(path);
  CHECK(e.verified_entry);
  CHECK(e.payload == R"({"x": 1})");
  const auto moved = root.path() / "r.autotune.json";
  fs::copy_file(path, moved);
  CHECK_THROWS_WITH(cache_inventory::read_entry(moved), Catch::Contains("damaged, renamed or moved"));
  write(root.path() / "plain.json", R"({"y": 2})");
  auto plain = cache_inventory::read_entry(root.path() / "plain.json");
  CHECK_FALSE(plain.verified_entry);
  CHECK(plain.payload == R"({"y": 2})");
  CHECK_THROWS_WITH(cache_inventory::read_entry(root.path() / "missing.json"), Catch::Contains("cannot read"));
}

TEST_CASE("key directories are told from other names", "[cache][cache_inventory]") {
  const auto dir = file_cache(fs::path("/nowhere"), key_a).dir().filename().string();
  CHECK(cache_inventory::key_of_dir(dir) == key_a);
  CHECK_FALSE(cache_inventory::key_of_dir("project"));
  CHECK_FALSE(cache_inventory::key_of_dir(std::string(52, 'a'))); // lower case is not what cotune writes
}

TEST_CASE("gc reclaims the temporary files of 200 writers killed with kill -9, and never a live writer's",
          "[cache][cache_inventory][gc]") {
  temp_dir root;
  const std::vector<std::string> keys{key_a, key_b, cotune::detail::sha256_hex("c"), cotune::detail::sha256_hex("d")};
  int ready[2], go[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  constexpr int killed = 200, live = 2;
  std::vector<pid_t> doomed, alive;
  for (int i = 0; i < killed + live; ++i) {
    const pid_t pid = start_writer(root.path(), keys[static_cast<std::size_t>(i) % keys.size()], ready[1], go[0]);
    REQUIRE(pid > 0);
    (i < killed ? doomed : alive).push_back(pid);
  }
  for (int i = 0; i < killed + live; ++i) { // every writer is mid-write
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
  }
  for (pid_t pid : doomed) ::kill(pid, SIGKILL);
  for (pid_t pid : doomed) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
  }
  REQUIRE(temporaries_under(root.path()) == killed + live);

  const cache_inventory inv{root.path()};
  // Their writers are dead (their names say which process on this host wrote them): the orphans go at
  // once, young as they are; the live writers' files stay.
  const auto report = inv.gc({0, std::chrono::seconds(600)});
  CHECK(report.temporaries_removed == killed);
  CHECK(report.temporary_bytes == killed * 4096u);
  CHECK(temporaries_under(root.path()) == live);
  // However old, a live writer's file stays: it holds its lock.
  CHECK(inv.gc({0, std::chrono::seconds(0)}).temporaries_removed == 0);
  CHECK(temporaries_under(root.path()) == live);

  // The live writers finish: their entries are whole, and nothing temporary is left.
  const char bytes[live] = {'g', 'g'};
  REQUIRE(::write(go[1], bytes, live) == live);
  for (pid_t pid : alive) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
  CHECK(temporaries_under(root.path()) == 0);
  const auto t = cache_inventory::totals(inv.files());
  CHECK(t.temporary == 0);
  CHECK(t.corrupt == live); // written raw by the test's writers, unframed: a miss for readers, as it should be
}

TEST_CASE("a later writer reclaims its key directory's orphaned temporary files at once", "[cache][cache_inventory][gc]") {
  temp_dir root;
  int ready[2], go[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> writers;
  for (int i = 0; i < 5; ++i) writers.push_back(start_writer(root.path(), key_a, ready[1], go[0]));
  for (std::size_t i = 0; i < writers.size(); ++i) {
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
  }
  for (pid_t pid : writers) ::kill(pid, SIGKILL);
  for (pid_t pid : writers) ::waitpid(pid, nullptr, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
  REQUIRE(temporaries_under(root.path()) == 5);
  file_cache c(root.path(), key_a);
  auto age = cotune::knobs().cache.tmp_max_age_s.scoped(600);
  c.put("their writers are dead: they go at once, young as they are", "x");
  CHECK(temporaries_under(root.path()) == 0);
  CHECK(c.get("x") == "their writers are dead: they go at once, young as they are");
}

TEST_CASE("gc never evicts an entry another live process holds, and does once it is gone",
          "[cache][cache_inventory][gc]") {
  temp_dir root;
  file_cache c(root.path(), key_a);
  c.put(std::string(1000, 'a'), "held.so");
  c.put(std::string(1000, 'b'), "free.so");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    auto pin = file_cache(root.path(), key_a).pin("held.so");
    char byte = pin ? 'p' : 'n';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    ::pause(); // holds the pin until killed
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  REQUIRE(byte == 'p');
  const cache_inventory inv{root.path()};
  auto report = inv.gc({1, std::chrono::seconds(600)});
  CHECK(report.evicted == 1);
  CHECK(report.pinned == 1);
  CHECK(c.get("held.so") == std::string(1000, 'a'));
  CHECK_FALSE(c.get("free.so"));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  report = inv.gc({1, std::chrono::seconds(600)});
  CHECK(report.evicted == 1);
  CHECK(report.pinned == 0);
  CHECK_FALSE(c.get("held.so"));
  // The key directory goes with its last entry, at once (gc holds the ledger's lock, under which puts
  // make their directories): an empty one is a block on disk that counts against nothing.
  CHECK(report.dirs_removed == 1);
  CHECK(inv.gc({0, std::chrono::seconds(0)}).dirs_removed == 0);
  CHECK(cache_inventory::totals(inv.files()).keys == 0);
}

TEST_CASE("gc refuses a directory it cannot trust and removes nothing from it", "[cache][cache_inventory][gc]") {
  temp_dir root;
  file_cache(root.path() / "cache", key_a).put("x", "k.so");
  ::chmod((root.path() / "cache").c_str(), 0777);
  const cache_inventory inv{root.path() / "cache"};
  CHECK_FALSE(inv.trust().trusted);
  CHECK_THROWS_WITH(inv.gc({1, std::chrono::seconds(0)}), Catch::Contains("chmod 700"));
  CHECK(cache_inventory::totals(inv.files()).valid == 1);
}
