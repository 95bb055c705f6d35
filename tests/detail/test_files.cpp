// Tests for cotune/detail/files.hpp (private directories, whole-file reads) and the path-based atomic
// writes of cotune/detail/dir_fd.hpp.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace cotune::detail;

namespace {

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

/// Sets the umask for the lifetime of the object.
struct scoped_umask {
  explicit scoped_umask(mode_t m) : old(::umask(m)) {}
  ~scoped_umask() { ::umask(old); }
  scoped_umask(const scoped_umask&) = delete;
  scoped_umask& operator=(const scoped_umask&) = delete;
  mode_t old;
};

} // namespace

TEST_CASE("make_private_dirs creates every missing level with mode 0700", "[detail][files]") {
  cotune_test::temp_dir tmp;
  scoped_umask umask(022); // the usual umask: directories made with it are 0700, not 0755
  const auto dir = tmp.path() / "a" / "b" / "c";
  make_private_dirs(dir);
  CHECK(fs::is_directory(dir));
  CHECK(mode_of(tmp.path() / "a") == 0700);
  CHECK(mode_of(tmp.path() / "a" / "b") == 0700);
  CHECK(mode_of(dir) == 0700);
  make_private_dirs(dir); // again: nothing to do, no error
  CHECK(fs::is_directory(dir));
}

TEST_CASE("make_private_dirs leaves existing directories as they are", "[detail][files]") {
  cotune_test::temp_dir tmp;
  const auto shared = tmp.path() / "shared";
  fs::create_directory(shared);
  ::chmod(shared.c_str(), 0755);
  make_private_dirs(shared / "mine");
  CHECK(mode_of(shared) == 0755);
  CHECK(mode_of(shared / "mine") == 0700);
}

TEST_CASE("make_private_dirs reports a file in the way, naming the path", "[detail][files]") {
  cotune_test::temp_dir tmp;
  std::ofstream(tmp.path() / "file") << "x";
  CHECK_THROWS_AS(make_private_dirs(tmp.path() / "file"), std::system_error);
  CHECK_THROWS_WITH(make_private_dirs(tmp.path() / "file" / "sub"),
                    Catch::Contains((tmp.path() / "file").string()) && Catch::Contains("Not a directory"));
}

TEST_CASE("make_private_dirs reports an unwritable parent", "[detail][files]") {
  if (::geteuid() == 0) {
    WARN("running as root: permission bits are not enforced, skipping");
    return;
  }
  cotune_test::temp_dir tmp;
  const auto locked = tmp.path() / "locked";
  fs::create_directory(locked);
  ::chmod(locked.c_str(), 0500);
  CHECK_THROWS_WITH(make_private_dirs(locked / "sub"), Catch::Contains("cannot create directory"));
  ::chmod(locked.c_str(), 0700);
}

TEST_CASE("read_file reads whole binary files and misses absent and non-regular ones", "[detail][files]") {
  cotune_test::temp_dir tmp;
  const std::string data("a\0b\xff\n", 5);
  {
    std::ofstream out(tmp.path() / "bin", std::ios::binary);
    out << data;
  }
  auto back = read_file(tmp.path() / "bin");
  REQUIRE(back);
  CHECK(*back == data);
  const std::string big(3'000'000, 'z');
  std::ofstream(tmp.path() / "big", std::ios::binary) << big;
  CHECK(read_file(tmp.path() / "big") == big);
  std::ofstream(tmp.path() / "empty", std::ios::binary).flush();
  CHECK(read_file(tmp.path() / "empty") == std::string());
  CHECK_FALSE(read_file(tmp.path() / "absent"));
  CHECK_FALSE(read_file(tmp.path())); // a directory
  REQUIRE(::mkfifo((tmp.path() / "fifo").c_str(), 0600) == 0);
  CHECK_FALSE(read_file(tmp.path() / "fifo")); // and it does not block
}

TEST_CASE("atomic_write writes the concatenated parts, replaces the target, leaves no temporary file",
          "[detail][files]") {
  cotune_test::temp_dir tmp;
  const auto target = tmp.path() / "entry";
  atomic_write(target, std::string("abc"), std::string_view("def"), "ghi");
  CHECK(read_file(target) == "abcdefghi");
  CHECK(mode_of(target) == 0600);
  atomic_write(target, std::string("new"));
  CHECK(read_file(target) == "new");
  CHECK(names_in(tmp.path()) == std::set<std::string>{"entry"});
}

TEST_CASE("atomic_write handles names up to 255 bytes", "[detail][files]") {
  cotune_test::temp_dir tmp;
  const auto target = tmp.path() / std::string(255, 'n');
  atomic_write(target, std::string("long"));
  CHECK(read_file(target) == "long");
  CHECK(names_in(tmp.path()).size() == 1);
}

TEST_CASE("atomic_write of a bare file name writes in the current directory", "[detail][files]") {
  cotune_test::temp_dir tmp;
  struct back_to {
    fs::path dir;
    ~back_to() { fs::current_path(dir); } // the other tests run in this process's directory
  } const returned{fs::current_path()};
  fs::current_path(tmp.path());
  atomic_write(fs::path("bare"), std::string("here"));
  CHECK(read_file(tmp.path() / "bare") == "here");
  CHECK(names_in(tmp.path()) == std::set<std::string>{"bare"});
}

TEST_CASE("atomic_write into a directory it cannot list still writes", "[detail][files]") {
  // The directory is opened with O_PATH (named in the *at calls only): write and search permission
  // are what a write needs, as for a plain open by path.
  if (::geteuid() == 0) {
    WARN("running as root: permission bits are not enforced, skipping");
    return;
  }
  cotune_test::temp_dir tmp;
  const auto dir = tmp.path() / "write-only";
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_write | fs::perms::owner_exec);
  struct restore {
    fs::path dir;
    ~restore() {
      std::error_code ec; // so that the temporary directory can go, whatever happened
      fs::permissions(dir, fs::perms::owner_all, ec);
    }
  } restored{dir};
  atomic_write(dir / "entry", std::string("x"));
  fs::permissions(dir, fs::perms::owner_all);
  CHECK(read_file(dir / "entry") == "x");
  CHECK(names_in(dir) == std::set<std::string>{"entry"});
}

TEST_CASE("atomic_write into a missing directory fails cleanly", "[detail][files]") {
  cotune_test::temp_dir tmp;
  CHECK_THROWS_WITH(atomic_write(tmp.path() / "missing" / "entry", std::string("x")),
                    Catch::Contains("cannot write file"));
  CHECK(names_in(tmp.path()).empty());
}

TEST_CASE("atomic_write onto a directory fails and removes its temporary file", "[detail][files]") {
  cotune_test::temp_dir tmp;
  fs::create_directory(tmp.path() / "entry");
  fs::create_directory(tmp.path() / "entry" / "child"); // rename() refuses to replace a non-empty directory
  CHECK_THROWS_WITH(atomic_write(tmp.path() / "entry", std::string("x")), Catch::Contains("cannot rename"));
  CHECK(names_in(tmp.path()) == std::set<std::string>{"entry"});
}

TEST_CASE("random suffixes are 16 hex digits and differ", "[detail][files]") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto s = random_suffix();
    CHECK(s.size() == 16);
    CHECK(s.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(s);
  }
  CHECK(seen.size() == 100);
}
