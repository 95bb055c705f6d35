// Tests for cotune/cache/file_cache.hpp: layout, framing, damaged entries, names, groups, modes, links
// planted in the cache, pinning and eviction, a full and a read-only file system (real tmpfs mounts,
// skipped with a WARN where mounting is not permitted), and two real processes writing one key at once.

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/cache/cache_inventory.hpp>
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

std::time_t mtime_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mtime;
}

/// Sets a file's mtime to `seconds_ago` seconds before now.
void age(const fs::path& p, std::time_t seconds_ago) {
  const struct timespec times[2] = {{0, UTIME_OMIT}, {std::time(nullptr) - seconds_ago, 0}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

/// A tmpfs mounted at `at` (mode 0700) for the guard's lifetime; `mounted` is false (after a WARN)
/// where this process may not mount.
struct tmpfs_mount {
  fs::path at;
  bool mounted = false;
  tmpfs_mount(fs::path where, const char* size) : at(std::move(where)) {
    fs::create_directories(at);
    const auto options = std::string("mode=0700,size=") + size;
    mounted = ::mount("tmpfs", at.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted) WARN("skipped: cannot mount a tmpfs here (" << std::strerror(errno) << ")");
  }
  tmpfs_mount(const tmpfs_mount&) = delete;
  tmpfs_mount& operator=(const tmpfs_mount&) = delete;
  ~tmpfs_mount() {
    if (mounted) ::umount2(at.c_str(), MNT_DETACH);
  }
};

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
  // Beside the key directories, only the ledger (cache/cache_ledger.hpp).
  CHECK(names_in(cache.cache_dir()) == std::set<std::string>{s.dir().filename().string(), ".cotune-ledger"});
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

TEST_CASE("links planted in the cache are never followed, and a put replaces the link itself", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key), other(cotune::detail::sha256_hex("another key"));
  c.put("the real payload", "k.so");
  const auto outside = cache.root() / "outside";
  fs::create_directory(outside);

  SECTION("an entry that is a link to a file elsewhere") {
    // A valid entry for this very key and name, kept outside the cache: only the link leads to it.
    file_cache decoy(outside, key);
    const auto target = decoy.put("what the link leads to", "link.so");
    fs::create_symlink(target, c.dir() / "link.so");
    CHECK_FALSE(c.get("link.so"));
    CHECK_FALSE(c.get_file("link.so"));
    CHECK_FALSE(c.pin("link.so"));
    c.put("written through the cache", "link.so");
    CHECK(fs::is_regular_file(fs::symlink_status(c.dir() / "link.so")));
    CHECK(c.get("link.so") == "written through the cache");
    CHECK(decoy.get("link.so") == "what the link leads to"); // the target is untouched
  }
  SECTION("a key directory that is a link to a directory elsewhere") {
    file_cache decoy(outside, cotune::detail::sha256_hex("another key"));
    decoy.put("what the link leads to", "k.so");
    fs::create_directories(cache.cache_dir());
    fs::create_directory_symlink(decoy.dir(), other.dir());
    CHECK_FALSE(other.get("k.so"));
    CHECK_FALSE(other.get_file("k.so"));
    other.put("written through the cache", "k.so");
    CHECK(fs::is_directory(fs::symlink_status(other.dir())));
    CHECK(mode_of(other.dir()) == 0700);
    CHECK(other.get("k.so") == "written through the cache");
    CHECK(decoy.get("k.so") == "what the link leads to");
  }
  SECTION("a link to a device or a FIFO where an entry belongs") {
    fs::create_symlink("/dev/zero", c.dir() / "zero.so");
    REQUIRE(::mkfifo((c.dir() / "fifo.so").c_str(), 0600) == 0);
    CHECK_FALSE(c.get("zero.so"));
    CHECK_FALSE(c.get("fifo.so")); // and it did not block
  }
  SECTION("the root itself may be reached through a link: its target is what is checked") {
    const auto via = cache.root() / "via-link";
    fs::create_directory_symlink(cache.cache_dir(), via);
    file_cache through(via, key);
    CHECK(through.get("k.so") == "the real payload");
  }
  CHECK(c.get("k.so") == "the real payload");
}

TEST_CASE("an entry this user did not write is a miss", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto path = c.put("payload", "k.so");
  ::chmod(path.c_str(), 0666);
  CHECK_FALSE(c.get("k.so")); // writable by others: not cotune's 0600
  ::chmod(path.c_str(), 0600);
  CHECK(c.get("k.so") == "payload");
  if (::geteuid() == 0) {
    REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(c.get("k.so")); // owned by nobody
    c.put("payload", "k.so");   // replaced by this user's own
    CHECK(c.get("k.so") == "payload");
  }
}

TEST_CASE("a read refreshes the recency of an entry last used over an hour ago", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const auto path = c.put("payload", "k.so");
  age(path, 2 * 3600);
  const auto old = mtime_of(path);
  CHECK(c.get("k.so"));
  CHECK(mtime_of(path) > old + 3600);
  age(path, 30 * 60); // used half an hour ago: left alone, no write on the read path
  const auto recent = mtime_of(path);
  CHECK(c.get_file("k.so"));
  CHECK(mtime_of(path) == recent);
}

TEST_CASE("beyond cache.max_bytes, a put evicts least recently used entries, never a pinned one",
          "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  const std::string kb(1000, 'x'); // 1092 bytes on disk with its frame
  for (const char* name : {"a", "b", "c"}) c.put(kb, name);
  age(c.dir() / "a", 4 * 3600);
  age(c.dir() / "b", 3 * 3600);
  age(c.dir() / "c", 2 * 3600);
  auto pinned = c.pin("a"); // the oldest, but loaded by a live process (this one)
  REQUIRE(pinned);
  CHECK(pinned->path() == c.dir() / "a");
  CHECK(c.get("b")); // used now: the most recent
  {
    // 3 x 1092 + 392 = 3668 bytes: eviction goes down to a tenth below the limit less the new entry
    // (3000 - 300 - 392 = 2308): c goes (a is pinned), and then 2184 fit.
    auto limit = cotune::knobs().cache.max_bytes.scoped(3000);
    c.put(std::string(300, 'e'), "e");
  }
  CHECK(names_in(c.dir()) == std::set<std::string>{"a", "b", "e"});
  CHECK(c.get("a") == kb); // the pinned entry is whole and valid
  pinned.reset();          // released: now it can go, and it is the least recently used
  const auto report = cotune::cache_inventory(cache.cache_dir()).gc({1500, std::chrono::seconds(600)});
  CHECK(report.evicted == 1);
  CHECK(report.pinned == 0);
  CHECK(names_in(c.dir()) == std::set<std::string>{"b", "e"});
}

TEST_CASE("a pin names exactly the file that was verified", "[cache][file_cache]") {
  private_cache cache;
  file_cache c(key);
  c.put("first", "k.so");
  auto pin = c.pin("k.so");
  REQUIRE(pin);
  c.put("second", "k.so"); // replaced by name while pinned
  const auto held = cotune::detail::read_file(pin->fd_path());
  REQUIRE(held);
  CHECK(held->starts_with("first"));
  CHECK(c.get("k.so") == "second");
}

TEST_CASE("on a full file system a put fails naming the path and the cause, and leaves no temporary file",
          "[cache][file_cache]") {
  private_cache cache;
  tmpfs_mount small(cache.root() / "small", "64k");
  if (!small.mounted) return;
  file_cache c(small.at, key);
  c.put("fits", "small.so");
  CHECK_THROWS_WITH(c.put(std::string(200 * 1024, 'x'), "big.so"),
                    Catch::Contains(c.dir().string()) && Catch::Contains("No space left on device"));
  CHECK(names_in(c.dir()) == std::set<std::string>{"small.so"});
  CHECK(c.get("small.so") == "fits");
  c.put("still fits", "after.so");
  CHECK(c.get("after.so") == "still fits");
}

TEST_CASE("a read-only cache serves its entries and refuses puts with the reason", "[cache][file_cache]") {
  private_cache cache;
  tmpfs_mount ro(cache.root() / "ro", "1m");
  if (!ro.mounted) return;
  file_cache c(ro.at, key);
  const auto path = c.put("payload", "k.so");
  age(path, 2 * 3600); // a read would refresh it, and cannot
  std::ofstream(c.dir() / ".tmp.k.so.1.2") << "left by a dead writer";
  age(c.dir() / ".tmp.k.so.1.2", 3600);
  if (::mount("tmpfs", ro.at.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "mode=0700") != 0) {
    WARN("skipped: cannot remount the tmpfs read-only (" << std::strerror(errno) << ")");
    return;
  }
  CHECK(c.get("k.so") == "payload");
  CHECK(c.get_file("k.so") == path);
  CHECK(c.pin("k.so"));
  CHECK_THROWS_WITH(c.put("new", "k.so"), Catch::Contains(ro.at.string()) && Catch::Contains("Read-only file system"));
  const auto report = cotune::cache_inventory(ro.at).gc({1, std::chrono::seconds(0)});
  CHECK(report.temporaries_removed == 0);
  CHECK(report.evicted == 0);
  CHECK(c.get("k.so") == "payload");
}

TEST_CASE("without fsync, a power loss that tears an entry after its rename costs that entry, never its content",
          "[cache][file_cache][durability]") {
  private_cache cache;
  auto no_flush = cotune::knobs().cache.fsync.scoped(false);
  file_cache c(key);
  const std::string payload(64 * 1024, 'p');
  const auto path = c.put(payload, "entry.bin");
  const auto written = raw(path);
  // What a power loss can leave without a flush: the rename made it to disk, the data did not (or only
  // part of it). Every torn length is a miss; the next put writes the entry again.
  for (std::size_t keep : {std::size_t{0}, std::size_t{1}, written.size() / 2, written.size() - 1}) {
    INFO("bytes kept: " << keep);
    write_raw(path, written.substr(0, keep));
    CHECK_FALSE(c.get("entry.bin"));
    CHECK_FALSE(c.get_file("entry.bin"));
    CHECK_FALSE(c.pin("entry.bin"));
  }
  // Zeros where the data should be (an extent allocated but never written) are a miss too.
  write_raw(path, std::string(written.size(), '\0'));
  CHECK_FALSE(c.get("entry.bin"));
  c.put(payload, "entry.bin");
  CHECK(c.get("entry.bin") == payload);
  // A temporary written whole but never renamed (the writer died first) is never served as the entry.
  write_raw(path.parent_path() / ".tmp.other.bin.1.0000", written);
  CHECK_FALSE(c.get("other.bin"));
}

TEST_CASE("writers killed with SIGKILL mid-put, without fsync, never leave a partial entry behind",
          "[cache][file_cache][durability]") {
  private_cache cache;
  auto no_flush = cotune::knobs().cache.fsync.scoped(false);
  const std::string payload(512 * 1024, 'k');
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        file_cache c(key);
        for (;;) c.put(payload, "killed.bin");
      } catch (...) {
      }
      ::_exit(1);
    }
    ::usleep(static_cast<useconds_t>(2000 + 500 * round)); // land the kill at varying points of a put
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    file_cache c(key);
    const auto got = c.get("killed.bin");
    INFO("round " << round);
    CHECK((!got || *got == payload)); // absent (killed before the first rename) or whole
  }
}
