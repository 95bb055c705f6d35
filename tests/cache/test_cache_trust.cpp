// Tests for cotune/cache/cache_trust.hpp and the file cache's refusal of directories it cannot trust:
// real directories, real modes and owners, and a real second user (nobody, in a forked child) where
// this process runs as root.

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cotune/cache/cache_trust.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>

#include "../support/second_user.hpp"
#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using cotune::cache_error;
using cotune::check_cache_dir;
using cotune::file_cache;
using cotune_test::temp_dir;

namespace {

const std::string key = cotune::detail::sha256_hex("a trusted key");

/// A temporary directory that a second user may pass through (0711) but not list or write.
struct passable_dir {
  temp_dir tmp{"cotune-trust"};
  passable_dir() { ::chmod(tmp.path().c_str(), 0711); }
  [[nodiscard]] fs::path operator/(const std::string& name) const { return tmp / name; }
};

} // namespace

TEST_CASE("a cache root writable by others is refused, saying where, what was found and the fix",
          "[cache][cache_trust]") {
  temp_dir tmp;
  const auto root = tmp / "cache";
  file_cache c(root, key);
  c.put("payload", "k.so");
  REQUIRE(c.get("k.so") == "payload");

  ::chmod(root.c_str(), 0777);
  const auto verdict = check_cache_dir(root);
  CHECK_FALSE(verdict.trusted);
  for (auto call : {+[](file_cache& f) { (void)f.get("k.so"); }, +[](file_cache& f) { (void)f.get_file("k.so"); },
                    +[](file_cache& f) { (void)f.pin("k.so"); }, +[](file_cache& f) { (void)f.put("x", "k.so"); }}) {
    CHECK_THROWS_WITH(call(c), Catch::Contains(root.string()) && Catch::Contains("writable by others") &&
                                   Catch::Contains("mode 0777") && Catch::Contains("chmod 700") &&
                                   Catch::Contains("COTUNE_CACHE_DIR"));
  }
  CHECK(cotune::detail::read_file(c.dir() / "k.so")); // refused, not removed

  // The verdict is cached per root, but follows the directory: fixed, it is trusted at once.
  ::chmod(root.c_str(), 0700);
  CHECK(check_cache_dir(root).trusted);
  CHECK(c.get("k.so") == "payload");

  ::chmod(root.c_str(), 0770);
  CHECK_THROWS_WITH(c.get("k.so"), Catch::Contains("writable by its group") && Catch::Contains("mode 0770"));
  ::chmod(root.c_str(), 01777); // /tmp's mode: the sticky bit does not keep a planted entry out
  CHECK_THROWS_AS(c.get("k.so"), cache_error);
  ::chmod(root.c_str(), 0755); // readable by others is fine: only writers matter
  CHECK(c.get("k.so") == "payload");
}

TEST_CASE("a key directory writable by others is refused", "[cache][cache_trust]") {
  temp_dir tmp;
  file_cache c(tmp / "cache", key);
  c.put("payload", "k.so");
  ::chmod(c.dir().c_str(), 0777);
  CHECK_THROWS_WITH(c.get("k.so"), Catch::Contains(c.dir().string()) && Catch::Contains("cache key directory") &&
                                       Catch::Contains("chmod 700"));
  CHECK_THROWS_AS(c.put("x", "k.so"), cache_error);
  ::chmod(c.dir().c_str(), 0700);
  CHECK(c.get("k.so") == "payload");
}

TEST_CASE("a missing root is trusted (the cache makes it 0700), and a file is not a directory",
          "[cache][cache_trust]") {
  temp_dir tmp;
  CHECK(check_cache_dir(tmp / "absent").trusted);
  std::ofstream(tmp / "file") << "x";
  const auto v = check_cache_dir(tmp / "file");
  CHECK_FALSE(v.trusted);
  CHECK_THAT(v.why, Catch::Contains("not a directory"));
  CHECK(check_cache_dir(tmp.path()).trusted); // mkdtemp makes 0700 directories
}

TEST_CASE("a cache root owned by another user is refused, naming the owner", "[cache][cache_trust]") {
  if (!cotune_test::can_become_another_user()) {
    WARN("skipped: changing a directory's owner needs root");
    return;
  }
  temp_dir tmp;
  const auto root = tmp / "cache";
  file_cache c(root, key);
  c.put("payload", "k.so");
  REQUIRE(::chown(root.c_str(), cotune_test::nobody_uid, cotune_test::nobody_gid) == 0);
  CHECK_THROWS_WITH(c.get("k.so"), Catch::Contains(root.string()) && Catch::Contains("owned by nobody (uid 65534)") &&
                                       Catch::Contains("not by this process's user root (uid 0)"));
  CHECK_THROWS_AS(c.put("x", "other"), cache_error);
  REQUIRE(::chown(c.dir().c_str(), cotune_test::nobody_uid, cotune_test::nobody_gid) == 0);
  REQUIRE(::chown(root.c_str(), 0, 0) == 0);
  CHECK_THROWS_WITH(c.get("k.so"), Catch::Contains("cache key directory") && Catch::Contains("nobody"));
}

TEST_CASE("a second user cannot plant or poison an entry in a trusted cache", "[cache][cache_trust]") {
  if (!cotune_test::can_become_another_user()) {
    WARN("skipped: running as a second user needs root");
    return;
  }
  passable_dir tmp;
  const auto root = tmp / "cache";
  file_cache c(root, key);
  const auto entry = c.put("the real payload", "k.so");
  const auto before = cotune::detail::read_file(entry);
  const int rc = cotune_test::run_as_nobody([&] {
    int refused = 0;
    // Through the library: the root is not the second user's, so nothing is read or written.
    try {
      file_cache(root, key).put("planted", "k.so");
    } catch (const cache_error&) {
      ++refused;
    }
    try {
      if (!file_cache(root, key).get("k.so")) ++refused; // it cannot even open the root: a miss
    } catch (const cache_error&) {
      ++refused;
    }
    // By hand: the 0700 directories keep every attempt out.
    if (::open((c.dir() / "k.so").c_str(), O_WRONLY | O_TRUNC) < 0 && errno == EACCES) ++refused;
    if (::open((c.dir() / "new.so").c_str(), O_WRONLY | O_CREAT, 0644) < 0 && errno == EACCES) ++refused;
    if (::symlink("/etc/passwd", (c.dir() / "link.so").c_str()) != 0 && errno == EACCES) ++refused;
    if (::rename(entry.c_str(), (root / "moved").c_str()) != 0 && errno == EACCES) ++refused;
    return refused == 6 ? 0 : 10 + refused;
  });
  CHECK(rc == 0);
  CHECK(cotune::detail::read_file(entry) == before);
  CHECK(c.get("k.so") == "the real payload");
}

TEST_CASE("a cache prepared by a second user is refused, though every entry in it checks out",
          "[cache][cache_trust]") {
  if (!cotune_test::can_become_another_user()) {
    WARN("skipped: running as a second user needs root");
    return;
  }
  passable_dir tmp;
  const auto theirs = tmp / "shared";
  fs::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), cotune_test::nobody_uid, cotune_test::nobody_gid) == 0);
  // The second user fills a cache of its own with the library: valid frames, for the right key.
  const int rc = cotune_test::run_as_nobody([&] {
    file_cache(theirs / "cache", key).put("a planted shared object", "k.so");
    return file_cache(theirs / "cache", key).get("k.so") == "a planted shared object" ? 0 : 1;
  });
  REQUIRE(rc == 0);
  // Pointed at it, this process loads nothing from it and says why.
  file_cache c(theirs / "cache", key);
  CHECK_THROWS_WITH(c.get_file("k.so"), Catch::Contains("owned by nobody") && Catch::Contains("COTUNE_CACHE_DIR"));
  CHECK_THROWS_AS(c.put("mine", "k.so"), cache_error);
}
