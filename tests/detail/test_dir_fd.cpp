// Tests for cotune/detail/dir_fd.hpp: opens relative to a directory that never follow links, the
// locked temporary-file writer, and reclaiming what a dead writer left.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace cotune::detail;
using std::chrono::seconds;

namespace {

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

} // namespace

TEST_CASE("opens below a directory descriptor never follow a link", "[detail][dir_fd]") {
  cotune_test::temp_dir tmp;
  std::ofstream(tmp / "real") << "content";
  fs::create_directory(tmp / "sub");
  fs::create_symlink(tmp / "real", tmp / "link");
  fs::create_directory_symlink(tmp / "sub", tmp / "dirlink");
  const auto dir = open_dir(tmp.path());
  REQUIRE(dir);
  auto f = open_file_at(dir.get(), "real");
  REQUIRE(f);
  CHECK(read_all(f->fd.get()) == "content");
  CHECK_FALSE(open_file_at(dir.get(), "link"));
  CHECK_FALSE(open_file_at(dir.get(), "sub")); // not a regular file
  CHECK_FALSE(open_file_at(dir.get(), "absent"));
  CHECK(open_dir_at(dir.get(), "sub"));
  CHECK_FALSE(open_dir_at(dir.get(), "dirlink"));
  CHECK(still_linked(dir.get(), "real", f->st));
  fs::rename(tmp / "real", tmp / "renamed");
  CHECK_FALSE(still_linked(dir.get(), "real", f->st));
}

TEST_CASE("make_dir_at creates 0700 directories and replaces a link, never its target", "[detail][dir_fd]") {
  cotune_test::temp_dir tmp;
  const mode_t old = ::umask(022);
  const auto dir = open_dir(tmp.path());
  auto made = make_dir_at(dir.get(), "new", tmp / "new");
  ::umask(old);
  CHECK(made);
  struct stat st {};
  REQUIRE(::stat((tmp / "new").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  fs::create_directory(tmp / "elsewhere");
  std::ofstream(tmp / "elsewhere" / "keep") << "x";
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "planted");
  CHECK(make_dir_at(dir.get(), "planted", tmp / "planted"));
  CHECK(fs::is_directory(fs::symlink_status(tmp / "planted")));
  CHECK(names_in(tmp / "elsewhere") == std::set<std::string>{"keep"});
  std::ofstream(tmp / "file") << "x";
  CHECK_THROWS_WITH(make_dir_at(dir.get(), "file", tmp / "file"), Catch::Contains((tmp / "file").string()));
}

TEST_CASE("a temporary file is renamed onto its target, or removed if never committed", "[detail][dir_fd]") {
  cotune_test::temp_dir tmp;
  const auto dir = open_dir(tmp.path());
  atomic_write_at(dir.get(), "target", tmp.path(), std::string("part one, "), std::string("part two"));
  CHECK(read_file(tmp / "target") == "part one, part two");
  {
    temp_file_writer w(dir.get(), "target", tmp.path());
    w.write("abandoned");
    CHECK(names_in(tmp.path()).count(w.temporary_name()) == 1);
  }
  CHECK(names_in(tmp.path()) == std::set<std::string>{"target"});
  CHECK(read_file(tmp / "target") == "part one, part two");
}

TEST_CASE("a temporary file is reclaimed when its writer is gone, or old enough and unlocked", "[detail][dir_fd]") {
  cotune_test::temp_dir tmp;
  const auto dir = open_dir(tmp.path());
  std::uintmax_t bytes = 0;
  {
    temp_file_writer w(dir.get(), "live", tmp.path());
    w.write("being written");
    CHECK_FALSE(reclaim_temporary(dir.get(), w.temporary_name(), seconds(0), bytes)); // locked by a live writer
    CHECK(names_in(tmp.path()).count(w.temporary_name()) == 1);
  }
  // A writer killed mid-write: its lock dies with it.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    temp_file_writer w(dir.get(), "dead", tmp.path());
    w.write("half of it");
    const auto name_size = static_cast<ssize_t>(w.temporary_name().size());
    if (::write(ready[1], w.temporary_name().data(), w.temporary_name().size()) != name_size) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  char name[256] = {};
  const auto n = ::read(ready[0], name, sizeof name - 1);
  REQUIRE(n > 0);
  const std::string orphan(name, static_cast<std::size_t>(n));
  CHECK_FALSE(reclaim_temporary(dir.get(), orphan, seconds(0), bytes)); // its writer still lives
  CHECK_FALSE(cotune::detail::temporary_writer_gone(orphan));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  CHECK(cotune::detail::temporary_writer_gone(orphan));
  CHECK(reclaim_temporary(dir.get(), orphan, seconds(3600), bytes)); // young, but its writer is gone
  CHECK(bytes == 10);
  CHECK(names_in(tmp.path()).empty());
  std::ofstream(tmp / "not.tmp") << "x"; // only temporary names are ever reclaimed
  CHECK_FALSE(reclaim_temporary(dir.get(), "not.tmp", seconds(0), bytes));
}

TEST_CASE("a temporary file's name says who writes it, and only this host's dead writers are known gone",
          "[detail][dir_fd]") {
  using cotune::detail::temporary_name_for;
  using cotune::detail::temporary_writer_gone;
  const std::string mine = temporary_name_for("entry.so");
  CHECK(cotune::detail::is_temporary_name(mine));
  CHECK(temporary_name_for(std::string(255, 'n')).size() <= 255);
  CHECK_FALSE(temporary_writer_gone(mine)); // this process
  // This process's id with another start time: the id was reused, so that writer is gone.
  const auto at = mine.rfind('@'), dash = mine.rfind('-', at);
  REQUIRE(at != std::string::npos);
  REQUIRE(dash != std::string::npos);
  CHECK(temporary_writer_gone(mine.substr(0, dash + 1) + "1" + mine.substr(at)));
  // Another host's writer, or a name that does not say (an older cotune's): nobody here can tell.
  CHECK_FALSE(temporary_writer_gone(mine.substr(0, at) + "@another-host.example"));
  CHECK_FALSE(temporary_writer_gone(".tmp.entry.so.12345.0123456789abcdef"));
  CHECK_FALSE(temporary_writer_gone("entry.so"));
}

TEST_CASE("modified_ago reads a file's age from its timestamp to the nanosecond and never below zero",
          "[detail][dir_fd]") {
  cotune_test::temp_dir tmp;
  const auto file = tmp / "f";
  std::ofstream(file) << "x";
  auto stat_of = [&] {
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    return st;
  };
  auto stamp = [&](struct timespec t) {
    const struct timespec times[2] = {t, t};
    REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
  };
  struct timespec now {};
  REQUIRE(::clock_gettime(CLOCK_REALTIME, &now) == 0);
  // Stamped 100.5 s ago: the half second counts (a whole-second difference would say 100 or 101).
  struct timespec past = now;
  past.tv_sec -= 100;
  if (past.tv_nsec >= 500000000) past.tv_nsec -= 500000000;
  else {
    past.tv_sec -= 1;
    past.tv_nsec += 500000000;
  }
  stamp(past);
  const auto age = modified_ago(stat_of());
  CHECK(age >= std::chrono::milliseconds(100500));
  CHECK(age < seconds(3600)); // read from this timestamp, not from anywhere else
  // A "never" limit of 10^10 s is not met by it (integer nanoseconds would overflow there).
  CHECK_FALSE(age >= seconds(10000000000));
  // Stamped ahead of the clock (a fine-grained stamp ahead of time(nullptr), another host's clock):
  // new, so a zero minimum age is met at once and no age is negative.
  stamp({now.tv_sec + 10, now.tv_nsec});
  CHECK(modified_ago(stat_of()) == seconds(0));
}
