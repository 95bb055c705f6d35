// Tests for cotune/cache/cache_inventory.hpp: a real cache directory, real files, real damage.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/detail/hashing.hpp>

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
