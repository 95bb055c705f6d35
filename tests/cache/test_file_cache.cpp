// Tests for cotune/cache/file_cache.hpp: layout, framing, damaged entries, names, groups, modes, and
// two real processes writing one key at once.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/hashing.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using cotune::cache_error;
using cotune::cache_mode;
using cotune::file_cache;
using cotune_test::private_cache;
using cotune_test::scoped_env;

static_assert(cotune::CacheManager<file_cache>);

namespace {

const std::string key = cotune::detail::sha256_hex("a test key");

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string raw(const fs::path& p) { return cotune::detail::read_file(p).value_or("<absent>"); }

void write_raw(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

} // namespace

TEST_CASE("entries live at <dir>/<base32(key)>/<name>", "[cache][file_cache]") {
  private_cache cache;
  file_cache c("00ff1080");
  CHECK(c.dir() == cache.cache_dir() / "AD7RBAA");
  CHECK(c.mode() == cache_mode::normal);
  file_cache s(key);
  CHECK(s.dir() == cache.cache_dir() / cotune::detail::base32(cotune::detail::sha256("a test key")));
  CHECK(s.dir().filename().string().size() == 52);
  const auto path = s.put("payload", "kernel.so");
  CHECK(path == s.dir() / "kernel.so");
  CHECK(s.get("kernel.so") == "payload");
  CHECK(s.get_file("kernel.so") == path);
  CHECK(names_in(cache.cache_dir()) == std::set<std::string>{s.dir().filename().string()});
}

TEST_CASE("keys must be lower-case hex digests", "[cache][file_cache]") {
  private_cache cache;
  for (const char* bad : {"", "abc", "ABCD", "zz", "../00", "00/11"}) {
    INFO(bad);
    CHECK_THROWS_AS(file_cache(bad), cache_error);
  }
  CHECK_THROWS_WITH(file_cache("xyz0"), Catch::Contains("'xyz0'") && Catch::Contains("hex"));
}

TEST_CASE("an empty cache directory setting is an error saying what to set", "[cache][file_cache]") {
  auto scope = cotune::knobs().cache.dir.scoped("");
  CHECK_THROWS_WITH(file_cache(key), Catch::Contains("COTUNE_CACHE_DIR"));
}

TEST_CASE("a lookup never creates directories", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  CHECK_FALSE(c.get("absent"));
  CHECK_FALSE(c.get_file("absent"));
  CHECK_FALSE(c.get_group("absent"));
  file_cache dump(key, cache_mode::dump);
  CHECK_FALSE(dump.get_file("absent"));
  file_cache over(key, cache_mode::override_);
  CHECK_FALSE(over.get("absent"));
  CHECK_FALSE(fs::exists(cache.cache_dir()));
  CHECK_FALSE(fs::exists(cache.dump_dir()));
  CHECK_FALSE(fs::exists(cache.override_dir()));
  CHECK(names_in(cache.root()).empty());
}

TEST_CASE("directories are created 0700 on the first put", "[cache][file_cache]") {
  private_cache cache;
  const mode_t old = ::umask(022);
  file_cache c(key);
  c.put("x", "entry");
  ::umask(old);
  CHECK(mode_of(cache.cache_dir()) == 0700);
  CHECK(mode_of(c.dir()) == 0700);
  CHECK(mode_of(c.dir() / "entry") == 0600);
}

TEST_CASE("entries are framed on disk and read back exactly", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const std::string payload("binary\0data\xff", 12);
  const auto path = c.put(payload, "blob");
  const auto on_disk = raw(path);
  CHECK(on_disk.size() == payload.size() + cotune::detail::frame_size);
  CHECK(on_disk.substr(0, payload.size()) == payload);
  CHECK(c.get("blob") == payload);
  c.put("", "empty");
  CHECK(c.get("empty") == std::string());
  c.put("second", "blob"); // replaces
  CHECK(c.get("blob") == "second");
  CHECK(names_in(c.dir()) == std::set<std::string>{"blob", "empty"});
}

TEST_CASE("a truncated entry is a miss and the next put replaces it", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto path = c.put("the original payload", "entry.json");
  const auto full = raw(path);
  for (std::size_t cut : {full.size() - 1, full.size() - cotune::detail::frame_size, std::size_t{10}, std::size_t{0}}) {
    INFO("cut to " << cut);
    write_raw(path, full.substr(0, cut));
    CHECK_FALSE(c.get("entry.json"));
    CHECK_FALSE(c.get_file("entry.json"));
  }
  c.put("a new payload", "entry.json");
  CHECK(c.get("entry.json") == "a new payload");
}

TEST_CASE("a bit-flipped entry is a miss and the next put replaces it", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto path = c.put("the original payload", "entry.json");
  const auto full = raw(path);
  for (std::size_t at : {std::size_t{0}, std::size_t{5}, full.size() - 30, full.size() - 1}) {
    INFO("flip at " << at);
    auto damaged = full;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x04);
    write_raw(path, damaged);
    CHECK_FALSE(c.get("entry.json"));
    CHECK_FALSE(c.get_file("entry.json"));
  }
  c.put("the original payload", "entry.json");
  CHECK(c.get("entry.json") == "the original payload");
  CHECK(raw(path) == full);
}

TEST_CASE("a foreign file is a miss: an entry renamed, or a file nobody framed", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto path = c.put("payload of a", "a.bin");
  fs::rename(path, c.dir() / "b.bin");
  CHECK_FALSE(c.get("b.bin"));
  CHECK_FALSE(c.get_file("b.bin"));
  CHECK_FALSE(c.get("a.bin"));
  write_raw(c.dir() / "plain.txt", "written by someone else");
  CHECK_FALSE(c.get("plain.txt"));
  fs::create_directory(c.dir() / "dir.bin");
  CHECK_FALSE(c.get("dir.bin"));
  CHECK_FALSE(c.get_file("dir.bin"));
}

TEST_CASE("an entry copied into another key's directory is a miss there", "[cache][file_cache]") {
  private_cache cache;
  file_cache first(key), second(cotune::detail::sha256_hex("another key"));
  const auto path = first.put("the first key's result", "k.autotune.json");
  REQUIRE(first.get("k.autotune.json"));
  fs::create_directories(second.dir());
  fs::copy_file(path, second.dir() / "k.autotune.json");
  // Same name, same bytes, valid frame: but it was written for the first key, not this one.
  CHECK_FALSE(second.get("k.autotune.json"));
  CHECK_FALSE(second.get_file("k.autotune.json"));
  CHECK(first.get("k.autotune.json") == "the first key's result");
  second.put("the second key's result", "k.autotune.json");
  CHECK(second.get("k.autotune.json") == "the second key's result");
}

TEST_CASE("file names other than plain names are refused with a clear error", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const std::vector<std::string> bad{"",      "/",         "a/b",          "..",
                                     "../x",  "x/..",      ".",            std::string("a\0b", 3),
                                     ".tmp.x", ".tmp.entry.1.2", std::string(256, 'n')};
  for (const auto& name : bad) {
    INFO("name of " << name.size() << " bytes: " << name);
    CHECK_THROWS_AS(c.put("x", name), cache_error);
    CHECK_THROWS_AS(c.get(name), cache_error);
    CHECK_THROWS_AS(c.get_file(name), cache_error);
    CHECK_THROWS_AS(c.get_group(name), cache_error);
    CHECK_THROWS_AS(c.put_group(name, {}), cache_error);
    CHECK_THROWS_AS(c.put_group("g", {{name, c.dir() / "x"}}), cache_error);
  }
  CHECK_THROWS_WITH(c.put("x", "../escape"), Catch::Contains("'../escape'") && Catch::Contains("plain file name"));
  CHECK_THROWS_WITH(c.get(std::string("a\0b", 3)), Catch::Contains("a\\0b"));
  CHECK_FALSE(fs::exists(cache.cache_dir())); // nothing was written on the way
  // Dots are fine when they are not "..", and long names up to 255 bytes work.
  c.put("ok", ".hidden");
  c.put("ok", "a.b.c");
  c.put("ok", std::string(255, 'n'));
  CHECK(c.get(std::string(255, 'n')) == "ok");
  CHECK(names_in(c.dir()).size() == 3);
}

TEST_CASE("groups list their children, and missing children are omitted", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto a = c.put("A", "k.a");
  const auto b = c.put("B", "k.b");
  const auto group_path = c.put_group("k", {{"k.a", a}, {"k.b", b}});
  CHECK(group_path == c.dir() / "__grp__k.json");
  auto g = c.get_group("k");
  REQUIRE(g);
  CHECK(*g == cotune::cache_group{{"k.a", a}, {"k.b", b}});
  fs::remove(b);
  g = c.get_group("k");
  REQUIRE(g);
  CHECK(*g == cotune::cache_group{{"k.a", a}});
  write_raw(a, "damaged");
  g = c.get_group("k");
  REQUIRE(g);
  CHECK(g->empty());
  CHECK(c.put_group("none", {}) == c.dir() / "__grp__none.json");
  CHECK(c.get_group("none") == cotune::cache_group{});
}

TEST_CASE("a corrupt group is a miss", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto a = c.put("A", "k.a");
  const auto path = c.put_group("k", {{"k.a", a}});
  auto full = raw(path);
  full[2] = static_cast<char>(full[2] ^ 1);
  write_raw(path, full);
  CHECK_FALSE(c.get_group("k"));
  // Well framed, but not a group.
  c.put("not json", "__grp__k.json");
  CHECK_FALSE(c.get_group("k"));
  c.put(R"({"children": "k.a"})", "__grp__k.json");
  CHECK_FALSE(c.get_group("k"));
  c.put(R"({"children": [1]})", "__grp__k.json");
  CHECK_FALSE(c.get_group("k"));
  c.put(R"({"children": ["../k.a"]})", "__grp__k.json"); // a group naming an invalid file is foreign
  CHECK_FALSE(c.get_group("k"));
  c.put_group("k", {{"k.a", a}}); // and the next put_group replaces it
  CHECK(c.get_group("k") == cotune::cache_group{{"k.a", a}});
}

TEST_CASE("the override cache reads user files as they are and is read-only", "[cache][file_cache]") {
  private_cache cache;
  file_cache over(key, cache_mode::override_);
  CHECK(over.dir() == cache.override_dir() / file_cache(key).dir().filename());
  CHECK_THROWS_WITH(over.put("x", "kernel.ptx"), Catch::Contains("read-only") && Catch::Contains("kernel.ptx"));
  CHECK_THROWS_AS(over.put_group("g", {}), cache_error);
  CHECK_FALSE(fs::exists(cache.override_dir()));
  fs::create_directories(over.dir());
  write_raw(over.dir() / "kernel.ptx", "user's own text, no frame");
  CHECK(over.get("kernel.ptx") == "user's own text, no frame");
  CHECK(over.get_file("kernel.ptx") == over.dir() / "kernel.ptx");
  fs::create_directory(over.dir() / "sub");
  CHECK_FALSE(over.get_file("sub"));
  CHECK_FALSE(over.get("sub"));
}

TEST_CASE("the dump cache writes plain files people can read", "[cache][file_cache]") {
  private_cache cache;
  file_cache dump(key, cache_mode::dump);
  CHECK(dump.dir() == cache.dump_dir() / file_cache(key).dir().filename());
  const auto path = dump.put("int main() {}\n", "kernel.cpp");
  CHECK(path == dump.dir() / "kernel.cpp");
  CHECK(raw(path) == "int main() {}\n"); // no frame
  CHECK(dump.get("kernel.cpp") == "int main() {}\n");
  CHECK(dump.get_file("kernel.cpp") == path);
  CHECK(mode_of(cache.dump_dir()) == 0700);
  dump.put_group("g", {{"kernel.cpp", path}});
  CHECK(dump.get_group("g") == cotune::cache_group{{"kernel.cpp", path}});
}

TEST_CASE("the default directory is COTUNE_CACHE_DIR, else $XDG_CACHE_HOME/cotune, else ~/.cache/cotune",
          "[cache][file_cache]") {
  cotune_test::temp_dir tmp;
  scoped_env cache_env("COTUNE_CACHE_DIR", std::nullopt);
  scoped_env xdg("XDG_CACHE_HOME", std::nullopt);
  scoped_env home("HOME", (tmp.path() / "home").string());
  const auto leaf = file_cache("00ff1080").dir().filename();
  CHECK(leaf == "AD7RBAA");
  CHECK(file_cache("00ff1080").dir() == tmp.path() / "home" / ".cache" / "cotune" / leaf);
  xdg.set((tmp.path() / "xdg").string());
  CHECK(file_cache("00ff1080").dir() == tmp.path() / "xdg" / "cotune" / leaf);
  cache_env.set((tmp.path() / "explicit").string());
  file_cache c("00ff1080");
  CHECK(c.dir() == tmp.path() / "explicit" / leaf);
  c.put("x", "e");
  CHECK(names_in(tmp.path()) == std::set<std::string>{"explicit"});
  CHECK(mode_of(tmp.path() / "explicit") == 0700);
}

TEST_CASE("two processes writing one key concurrently leave exactly one valid entry and no temporary files",
          "[cache][file_cache]") {
  private_cache cache;
  constexpr int writes = 150;
  // Large payloads make a torn write likely to be seen if writes were not atomic.
  constexpr std::size_t size = 256 * 1024;
  auto payload = [](char who, int i) {
    std::string p(size, who);
    const auto tag = std::to_string(i);
    p.replace(0, tag.size(), tag);
    return p;
  };
  // A reader accepts only a whole payload of one writer.
  auto whole = [&](const std::string& p) {
    if (p.size() != size) return false;
    const char who = p.back();
    if (who != 'A' && who != 'B') return false;
    const auto digits = p.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos) return false;
    return p == payload(who, std::stoi(p.substr(0, digits)));
  };

  std::vector<pid_t> children;
  for (char who : {'A', 'B'}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        file_cache c(key);
        for (int i = 0; i < writes; ++i) c.put(payload(who, i), "shared.bin");
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  // Read while they write: every read is a miss (not written yet) or a whole entry.
  file_cache reader(key);
  int hits = 0, bad = 0, running = 2;
  while (running > 0) {
    if (auto p = reader.get("shared.bin")) (whole(*p) ? hits : bad)++;
    for (auto& pid : children) {
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        pid = -1;
        --running;
      }
    }
  }
  CHECK(bad == 0);
  INFO("whole entries read while the writers ran: " << hits);
  CHECK(names_in(reader.dir()) == std::set<std::string>{"shared.bin"});
  auto final_entry = reader.get("shared.bin");
  REQUIRE(final_entry);
  CHECK(whole(*final_entry));
  CHECK(std::stoi(final_entry->substr(0, final_entry->find_first_not_of("0123456789"))) == writes - 1);
}
