// Tests for cotune/cache/cache_ledger.hpp, with real processes (this test program forked): eight
// writers under a 4 MiB limit never take the cache past it, and the temporary files of writers
// killed with kill -9 midway are reclaimed by the next put and by gc at once.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/cache/cache_ledger.hpp>
#include <cotune/cache/entry_frame.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knobs.hpp>

#include "../support/temp_dir.hpp"

using cotune::file_cache;
namespace fs = std::filesystem;
namespace cd = cotune::detail;

namespace {

/// Bytes of every regular file under `root`: entries and temporary files, and the ledger itself unless
/// `without_ledger` (a few hundred bytes of bookkeeping the limit does not govern).
std::uint64_t bytes_under(const fs::path& root, bool without_ledger = false) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st {};
    if (without_ledger && it->path() == root / cd::cache_ledger::file_name) continue;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) n += static_cast<std::uint64_t>(st.st_size);
  }
  return n;
}

std::size_t temporaries_under(const fs::path& root) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (cd::is_temporary_name(e.path().filename().string())) ++n;
  return n;
}

/// An entry's content that says what it is: a header naming its key, name, size and seed, then bytes
/// drawn from the seed. Any reader can tell a whole entry from a torn or misplaced one.
std::string content_of(const std::string& key, const std::string& name, std::size_t size, std::uint64_t seed) {
  std::string s = fmt::format("cotune-test|{}|{}|{}|{}\n", key, name, size, seed);
  std::mt19937_64 rng(seed);
  while (s.size() < size)
    for (auto v = rng(), i = decltype(v){0}; i < 8; ++i, v >>= 8) s.push_back(static_cast<char>('a' + v % 26));
  s.resize(size);
  return s;
}

bool whole(const std::string& got, const std::string& key, const std::string& name) {
  const auto end = got.find('\n');
  if (end == std::string::npos) return false;
  std::size_t size = 0;
  unsigned long long seed = 0;
  const std::string head = fmt::format("cotune-test|{}|{}|", key, name);
  if (!got.starts_with(head) || std::sscanf(got.c_str() + head.size(), "%zu|%llu", &size, &seed) != 2) return false;
  return got == content_of(key, name, size, seed);
}

/// What a writer process saw, sent back through a pipe.
struct writer_report {
  std::uint64_t puts = 0, failed_puts = 0, reads = 0, hits = 0, corrupt_reads = 0, pin_lost = 0;
};

/// Forks a child that runs `body` and sends back what it returns through a pipe; `out` is the read end.
template <class Body>
pid_t fork_child(int& out, Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::close(fds[0]);
    int rc = 0;
    try {
      const auto report = body();
      if (::write(fds[1], &report, sizeof report) != static_cast<ssize_t>(sizeof report)) rc = 2;
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  ::close(fds[1]);
  out = fds[0];
  return pid;
}

template <class Report>
Report collect(pid_t pid, int fd) {
  Report r{};
  const auto n = ::read(fd, &r, sizeof r);
  ::close(fd);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child " << pid << " status " << status);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(n == static_cast<ssize_t>(sizeof r));
  return r;
}

} // namespace

TEST_CASE("eight writer processes never take the cache past its size limit, and leave it within it",
          "[cache][cache_ledger][processes]") {
  cotune_test::temp_dir tmp{"cotune-ledger"};
  const fs::path root = tmp / "cache";
  constexpr std::uint64_t limit = std::uint64_t(4) << 20;
  auto max_bytes = cotune::knobs().cache.max_bytes.scoped(static_cast<std::int64_t>(limit));
  fs::create_directories(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  // 64 keys x 4 names, entries of 16-64 KiB: 8 x 60 puts write about 19 MiB, the limit over four times.
  std::vector<std::string> keys;
  for (int k = 0; k < 64; ++k) keys.push_back(cd::sha256_hex(fmt::format("key {}", k)));
  constexpr int writers = 8, puts_each = 60;

  // The sampler: the total on disk, read while no put is between its steps (under the ledger's lock;
  // every change of the total happens under it, so these are all the totals there are), and read
  // without the lock as well, for the record (a walk without it can count an evicted entry and the
  // entry that took its room in another directory both).
  struct sampler_report {
    std::uint64_t samples = 0, peak = 0, peak_unlocked = 0;
  };
  int stop[2];
  REQUIRE(::pipe(stop) == 0);
  int sampler_out = -1;
  const pid_t sampler = fork_child(sampler_out, [&] {
    ::close(stop[1]);
    sampler_report r;
    const auto root_fd = cd::open_dir(root);
    for (;;) {
      {
        cd::cache_ledger held(root_fd.get(), root);
        r.peak = std::max(r.peak, bytes_under(root));
      }
      r.peak_unlocked = std::max(r.peak_unlocked, bytes_under(root));
      ++r.samples;
      // A walk takes a few milliseconds (under the sanitizers): pausing 10 ms between samples keeps
      // the sampler from holding the writers back most of the time.
      pollfd p{stop[0], POLLIN, 0};
      if (::poll(&p, 1, 10) != 0) break; // the writers are done (or the parent is gone)
    }
    return r;
  });
  ::close(stop[0]);

  std::vector<std::pair<pid_t, int>> children;
  for (int w = 0; w < writers; ++w) {
    int out = -1;
    const pid_t pid = fork_child(out, [&, w] {
      writer_report r;
      std::mt19937_64 rng(static_cast<std::uint64_t>(w) * 7919 + 1);
      // An entry this process holds all along (as a loaded binary is held): the oldest entry of all,
      // the first an eviction would take, and one it must never take.
      const std::string own_key = cd::sha256_hex(fmt::format("held by writer {}", w));
      const std::string held_content = content_of(own_key, "held.so", 8192, rng());
      file_cache(root, own_key).put(held_content, "held.so");
      auto pin = file_cache(root, own_key).pin("held.so");
      if (!pin) ++r.pin_lost;
      for (int i = 0; i < puts_each; ++i) {
        const auto& key = keys[rng() % keys.size()];
        const std::string name = fmt::format("e{}.bin", rng() % 4);
        const std::size_t size = 16384 + rng() % 49152;
        ++r.puts;
        try {
          file_cache(root, key).put(content_of(key, name, size, rng()), name);
        } catch (const std::exception& e) {
          ++r.failed_puts;
          fmt::print(stderr, "writer {}: put failed: {}\n", w, e.what());
        }
        for (int j = 0; j < 2; ++j) {
          const auto& rkey = keys[rng() % keys.size()];
          const std::string rname = fmt::format("e{}.bin", rng() % 4);
          ++r.reads;
          if (auto got = file_cache(root, rkey).get(rname)) {
            ++r.hits;
            if (!whole(*got, rkey, rname)) ++r.corrupt_reads;
          }
        }
      }
      // The held entry is still the file under its name, whole.
      struct stat held {}, now {};
      if (!pin || ::stat(pin->fd_path().c_str(), &held) != 0 || ::stat(pin->path().c_str(), &now) != 0 ||
          held.st_ino != now.st_ino || file_cache(root, own_key).get("held.so") != held_content)
        ++r.pin_lost;
      return r;
    });
    children.emplace_back(pid, out);
  }
  writer_report all;
  for (auto [pid, out] : children) {
    const auto r = collect<writer_report>(pid, out);
    all.puts += r.puts;
    all.failed_puts += r.failed_puts;
    all.reads += r.reads;
    all.hits += r.hits;
    all.corrupt_reads += r.corrupt_reads;
    all.pin_lost += r.pin_lost;
  }
  ::close(stop[1]);
  const auto sampled = collect<sampler_report>(sampler, sampler_out);

  const auto final_bytes = bytes_under(root, /*without_ledger=*/true);
  INFO(fmt::format("limit {} B; peak on disk {} B ({:.3f}x) over {} samples under the ledger's lock, {} B ({:.3f}x) "
                   "without it; {} B after; {} puts, {} reads ({} hits)",
                   limit, sampled.peak, double(sampled.peak) / double(limit), sampled.samples, sampled.peak_unlocked,
                   double(sampled.peak_unlocked) / double(limit), final_bytes, all.puts, all.reads, all.hits));
  CHECK(all.puts == writers * puts_each);
  CHECK(all.failed_puts == 0);
  CHECK(all.corrupt_reads == 0);
  CHECK(all.pin_lost == 0);
  CHECK(all.hits > 0);
  CHECK(sampled.samples > 0);
  CHECK(sampled.peak > limit / 2); // the cache did fill: the bound below was put to the test
  CHECK(double(sampled.peak) <= 1.05 * double(limit));
  CHECK(final_bytes <= limit);
  const auto totals = cotune::cache_inventory::totals(cotune::cache_inventory(root).files());
  CHECK(totals.temporary == 0);
  CHECK(totals.corrupt == 0);
  CHECK(totals.foreign == 0);
  CHECK(totals.valid >= static_cast<std::size_t>(writers)); // the held entries at least
  // No key directory is left empty: each is a block on disk (4 KiB on ext4) that `du` counts, and with
  // thousands of keys they once held the cache at 4x its limit.
  std::size_t empty_dirs = 0, dirs = 0;
  for (const auto& d : fs::directory_iterator(root))
    if (d.is_directory()) {
      ++dirs;
      if (fs::is_empty(d.path())) ++empty_dirs;
    }
  INFO(dirs << " key directories");
  CHECK(empty_dirs == 0);
}

namespace {

/// A writer that starts a real `put` of `size` bytes and stops midway (the put's own hook), saying so on
/// `ready`; it then waits to be killed, or finishes when a byte arrives on `go`.
pid_t start_paused_put(const fs::path& root, const std::string& key, std::size_t size, int ready, int go) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  static int ready_fd, go_fd;
  ready_fd = ready;
  go_fd = go;
  cd::put_midway_hook = [](const std::string&) {
    char byte = 'r';
    if (::write(ready_fd, &byte, 1) != 1) ::_exit(4);
    if (::read(go_fd, &byte, 1) != 1) ::_exit(5);
  };
  int rc = 1;
  try {
    file_cache(root, key).put(std::string(size, 'p'), "big.bin");
    rc = 0;
  } catch (...) {
  }
  ::_exit(rc);
}

} // namespace

TEST_CASE("the temporary files of writers killed with kill -9 midway are reclaimed at once by the next put and by gc",
          "[cache][cache_ledger][processes][gc]") {
  cotune_test::temp_dir tmp{"cotune-orphans"};
  const fs::path root = tmp / "cache";
  auto no_limit = cotune::knobs().cache.max_bytes.scoped(0); // reclaiming needs no limit
  auto default_age = cotune::knobs().cache.tmp_max_age_s.scoped(600);
  constexpr std::size_t size = std::size_t(1) << 20;
  constexpr int writers = 8;

  // Round one: eight writers of eight keys stop midway and are killed; one more stops and lives on.
  auto start_round = [&](int first_key, std::vector<pid_t>& doomed, int& go_write) {
    int ready[2], go[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(go) == 0);
    for (int i = 0; i < writers; ++i)
      doomed.push_back(start_paused_put(root, cd::sha256_hex(fmt::format("orphan {}", first_key + i)), size, ready[1], go[0]));
    for (int i = 0; i < writers; ++i) {
      char byte = 0;
      REQUIRE(::read(ready[0], &byte, 1) == 1);
    }
    ::close(ready[0]);
    ::close(ready[1]);
    ::close(go[0]);
    go_write = go[1];
  };
  std::vector<pid_t> doomed;
  int go_doomed = -1;
  start_round(0, doomed, go_doomed);
  int live_ready[2], live_go[2];
  REQUIRE(::pipe(live_ready) == 0);
  REQUIRE(::pipe(live_go) == 0);
  const pid_t live = start_paused_put(root, cd::sha256_hex("live"), size, live_ready[1], live_go[0]);
  char byte = 0;
  REQUIRE(::read(live_ready[0], &byte, 1) == 1);
  for (pid_t pid : doomed) ::kill(pid, SIGKILL);
  for (pid_t pid : doomed) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
  }
  ::close(go_doomed);
  // A temporary file of a writer on another host: only its age can tell, and it is young.
  const auto other_dir = file_cache(root, cd::sha256_hex("other host")).dir();
  fs::create_directories(other_dir);
  fs::permissions(other_dir, fs::perms::owner_all, fs::perm_options::replace);
  const std::string foreign = ".tmp.big.bin.0123456789abcdef.w4242-4242@another-host.example";
  std::ofstream(other_dir / foreign) << "in progress elsewhere";
  REQUIRE(temporaries_under(root) == writers + 2);
  CHECK(bytes_under(root) >= (writers + 1) * size); // reserved at full size from the start

  // The next put, to another key, reclaims the dead writers' files in every key directory.
  file_cache(root, cd::sha256_hex("next")).put("small", "next.bin");
  CHECK(temporaries_under(root) == 2); // the live writer's and the other host's
  CHECK(fs::exists(other_dir / foreign));

  // Round two: eight more, killed; `cotune cache gc` (the inventory's gc, with the knobs' settings).
  doomed.clear();
  start_round(writers, doomed, go_doomed);
  for (pid_t pid : doomed) ::kill(pid, SIGKILL);
  for (pid_t pid : doomed) ::waitpid(pid, nullptr, 0);
  ::close(go_doomed);
  REQUIRE(temporaries_under(root) == writers + 2);
  const auto report = cotune::cache_inventory(root).gc();
  CHECK(report.temporaries_removed == writers);
  CHECK(report.temporary_bytes == writers * (size + cd::frame_size)); // reserved at the entry's full size
  CHECK(temporaries_under(root) == 2);
  CHECK(fs::exists(other_dir / foreign));

  // The live writer was never disturbed: it finishes, and its entry is whole.
  REQUIRE(::write(live_go[1], "g", 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(live, &status, 0) == live);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (int fd : {live_ready[0], live_ready[1], live_go[0], live_go[1]}) ::close(fd);
  CHECK(file_cache(root, cd::sha256_hex("live")).get("big.bin") == std::string(size, 'p'));
  CHECK(temporaries_under(root) == 1);
  // Old enough, the other host's file goes too.
  CHECK(cotune::cache_inventory(root).gc({0, std::chrono::seconds(0)}).temporaries_removed == 1);
  CHECK(temporaries_under(root) == 0);
}
