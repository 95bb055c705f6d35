// Local cache puts with and without a flush to disk (issue 16 item 1): p50 and p99 of `file_cache::put`
// of a 16 KiB entry (about a host kernel's shared object) into fresh keys, COTUNE_CACHE_FSYNC on against
// off, alternating, in one run, in a scratch cache directory on the same file system as $TMPDIR.
// Usage: bench_cache_put [puts per side]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knobs.hpp>

namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
  const int puts = argc > 1 ? std::atoi(argv[1]) : 300;
  const auto root = std::filesystem::temp_directory_path() / ("cotune-bench-put-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  std::filesystem::permissions(root, std::filesystem::perms::owner_all);
  const std::string payload(16 * 1024, 'x');
  std::vector<double> flushed, unflushed;
  for (int i = 0; i < 2 * puts; ++i) {
    const bool flush = i % 2 == 0;
    auto knob = cotune::knobs().cache.fsync.scoped(flush);
    cotune::file_cache c(root, cotune::detail::sha256_hex("bench-put-" + std::to_string(i)));
    const auto t0 = std::chrono::steady_clock::now();
    c.put(payload, "kernel.so");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    (flush ? flushed : unflushed).push_back(ms);
  }
  std::filesystem::remove_all(root);
  std::printf("local put of 16 KiB into a new key (%d per side, alternating), on %s:\n", puts,
              std::filesystem::temp_directory_path().c_str());
  std::printf("  fsync on  (COTUNE_CACHE_FSYNC=1): p50 %.3f ms  p99 %.3f ms\n", quantile(flushed, 0.5),
              quantile(flushed, 0.99));
  std::printf("  fsync off (default):              p50 %.3f ms  p99 %.3f ms\n", quantile(unflushed, 0.5),
              quantile(unflushed, 0.99));
  std::printf("  p50 ratio on/off: %.1fx\n", quantile(flushed, 0.5) / quantile(unflushed, 0.5));
  return 0;
}
