// Tests for cotune/cache/local_key.hpp: the per-user key that turns entry checksums into MACs, with
// real key files, real caches, and a real second user where this process runs as root.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/cache/local_key.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>

#include "../support/second_user.hpp"
#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using cotune::cache_error;
using cotune::file_cache;
using cotune::knobs;
using cotune::local_cache_key;
using cotune_test::temp_dir;

namespace {

const std::string key = cotune::detail::sha256_hex("a signed key");

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

} // namespace

TEST_CASE("without a key, there is none", "[cache][local_key]") {
  auto file = knobs().cache.local_key_file.scoped(std::nullopt);
  auto direct = knobs().cache.local_key.scoped(std::nullopt);
  CHECK(local_cache_key().empty());
}

TEST_CASE("the key file is made 0600 in a 0700 directory on first use, then read back", "[cache][local_key]") {
  temp_dir tmp;
  const auto path = tmp / "config" / "cotune" / "cache.key";
  auto file = knobs().cache.local_key_file.scoped(path.string());
  const auto k = local_cache_key();
  CHECK(k.size() == 64); // 32 random bytes as hex
  CHECK(cotune::detail::is_hex(k));
  CHECK(mode_of(path) == 0600);
  CHECK(mode_of(path.parent_path()) == 0700);
  CHECK(cotune::detail::read_file(path) == k + "\n");
  CHECK(local_cache_key() == k);
  // A key written by hand is used as it is (trailing newline dropped), and the direct knob wins.
  const auto other = tmp / "mine.key";
  std::ofstream(other) << "my own secret\n";
  ::chmod(other.c_str(), 0600);
  auto file2 = knobs().cache.local_key_file.scoped(other.string());
  CHECK(local_cache_key() == "my own secret");
  auto direct = knobs().cache.local_key.scoped("from the secret store");
  CHECK(local_cache_key() == "from the secret store");
  // No stray temporary file is left beside a created key.
  for (const auto& e : fs::directory_iterator(path.parent_path())) CHECK(e.path().filename() == "cache.key");
}

TEST_CASE("a key file others may read, a link, or a file owned by another user is refused, naming the fix",
          "[cache][local_key]") {
  temp_dir tmp;
  const auto path = tmp / "open.key";
  std::ofstream(path) << "secret\n";
  ::chmod(path.c_str(), 0644);
  {
    auto file = knobs().cache.local_key_file.scoped(path.string());
    CHECK_THROWS_WITH(local_cache_key(), Catch::Contains(path.string()) && Catch::Contains("mode 0644") &&
                                            Catch::Contains("chmod 600"));
    // A cache that should sign cannot go on without its key: it says why, and callers fall back.
    CHECK_THROWS_AS(file_cache(tmp / "cache", key).put("x", "k.so"), cache_error);
  }
  const auto link = tmp / "link.key";
  fs::create_symlink(path, link);
  {
    auto file = knobs().cache.local_key_file.scoped(link.string());
    CHECK_THROWS_WITH(local_cache_key(), Catch::Contains("symbolic link"));
  }
  if (cotune_test::can_become_another_user()) {
    const auto theirs = tmp / "theirs.key";
    std::ofstream(theirs) << "their secret\n";
    ::chmod(theirs.c_str(), 0600);
    REQUIRE(::chown(theirs.c_str(), cotune_test::nobody_uid, cotune_test::nobody_gid) == 0);
    auto file = knobs().cache.local_key_file.scoped(theirs.string());
    CHECK_THROWS_WITH(local_cache_key(), Catch::Contains("owned by nobody"));
  }
}

TEST_CASE("with a local key, entries carry a MAC, and unsigned or otherwise signed entries are misses",
          "[cache][local_key]") {
  temp_dir tmp;
  const auto root = tmp / "cache";
  file_cache c(root, key);
  c.put("written without a key", "old.so");
  auto k = knobs().cache.local_key.scoped("key one");
  CHECK_FALSE(c.get("old.so")); // unsigned: refused by a reader holding the key
  CHECK_FALSE(c.get_file("old.so"));
  CHECK_FALSE(c.pin("old.so"));
  c.put("signed with key one", "new.so");
  CHECK(c.get("new.so") == "signed with key one");
  c.put("replaced, and signed", "old.so"); // the next put replaces a refused entry
  CHECK(c.get("old.so") == "replaced, and signed");
  {
    auto k2 = knobs().cache.local_key.scoped("key two");
    CHECK_FALSE(c.get("new.so"));
    const auto files = cotune::cache_inventory(root).files();
    REQUIRE(files.size() == 2);
    CHECK(files[0].status == cotune::cache_file_status::corrupt);
    CHECK_THAT(files[0].note, Catch::Contains("another local cache key"));
  }
  {
    auto none = knobs().cache.local_key.scoped(std::nullopt);
    CHECK(c.get("new.so") == "signed with key one"); // a reader without a key checks the checksum only
  }
}

TEST_CASE("with a local key, an entry planted by a second user is refused even where permissions are no help",
          "[cache][local_key]") {
  if (!cotune_test::can_become_another_user()) {
    WARN("skipped: running as a second user needs root");
    return;
  }
  temp_dir tmp;
  ::chmod(tmp.path().c_str(), 0711);
  const auto key_file = tmp / "home" / "cache.key";
  const auto mine = tmp / "mine";
  const auto staging = tmp / "staging";
  fs::create_directory(staging);
  REQUIRE(::chown(staging.c_str(), cotune_test::nobody_uid, cotune_test::nobody_gid) == 0);
  auto file = knobs().cache.local_key_file.scoped(key_file.string());
  file_cache c(mine, key);
  c.put("the real payload", "k.so");
  // The second user cannot read the key, and writes a well-framed entry of its own with the library.
  const int rc = cotune_test::run_as_nobody([&] {
    const auto stolen = cotune::detail::read_file(key_file);
    auto no_key = knobs().cache.local_key_file.scoped(std::nullopt);
    file_cache(staging, key).put("a planted payload", "k.so");
    return stolen ? 1 : 0;
  });
  REQUIRE(rc == 0);
  // The planted file reaches this user's cache the way a restored CI cache or a synced volume would:
  // copied in by this user, so that it is owned by this user and passes every permission check.
  const auto planted = file_cache(staging, key).dir() / "k.so";
  fs::copy_file(planted, c.dir() / "k.so", fs::copy_options::overwrite_existing);
  {
    auto no_key = knobs().cache.local_key_file.scoped(std::nullopt);
    CHECK(c.get("k.so") == "a planted payload"); // without a key, a checksum is all there is to check
  }
  CHECK_FALSE(c.get("k.so")); // with the key, the planted entry is refused
  CHECK_FALSE(c.get_file("k.so"));
  c.put("the real payload", "k.so");
  CHECK(c.get("k.so") == "the real payload");
}
