// The cost of journaling one key's tuning (issue 10 item 5): recording every outcome as it completes,
// for spaces of 100 to 5,000 candidates, into a real file cache in $TMPDIR. Side by side in one run:
// the whole result rewritten per outcome (the journal before chunks) against the chunked journal
// (tune/tuning_journal.hpp). Prints total wall seconds, bytes written and outcomes written per side.
// Usage: bench_journal [largest space]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cotune/cache/file_cache.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/tune/detail/tuning_journal.hpp>

namespace {

struct side {
  double seconds = 0;
  std::size_t bytes = 0, outcomes = 0;
};

std::vector<cotune::candidate_result> pending(std::size_t n) {
  std::vector<cotune::candidate_result> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].cfg = cotune::config{{"BLOCK_M", static_cast<std::int64_t>(16 << (i % 4))},
                                {"BLOCK_N", static_cast<std::int64_t>(i)},
                                {"STAGES", static_cast<std::int64_t>(2 + i % 3)}};
    out[i].status = cotune::candidate_status::not_run;
  }
  return out;
}

void complete(cotune::candidate_result& r, std::size_t i) {
  r.status = cotune::candidate_status::ok;
  const double t = 0.1 + static_cast<double>(i % 97) / 1000.0;
  r.time = {t, t * 0.99, t * 1.01};
  r.method = "event";
  r.rsd = 0.004;
  r.samples = 25;
}

/// Every outcome rewrites the whole result so far (the journal before chunks).
side whole(const std::filesystem::path& root, std::size_t n) {
  cotune::file_cache cache(root, cotune::detail::sha256_hex("whole-" + std::to_string(n)));
  auto results = pending(n);
  side s;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    complete(results[i], i);
    cotune::tuning_result partial;
    partial.kernel = "gemm";
    partial.key_text = "M=4096";
    partial.candidates = results;
    const auto text = partial.json();
    cache.put(text, "gemm.journal.json");
    s.bytes += text.size();
    s.outcomes += n;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

/// The chunked journal.
side chunked(const std::filesystem::path& root, std::size_t n) {
  cotune::file_cache cache(root, cotune::detail::sha256_hex("chunked-" + std::to_string(n)));
  auto results = pending(n);
  cotune::journal_writer writer("gemm", "M=4096");
  side s;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    complete(results[i], i);
    if (auto failed = writer.record(cache, results, i)) {
      std::fprintf(stderr, "bench_journal: %s\n", failed->c_str());
      std::exit(1);
    }
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.outcomes = writer.outcomes_written();
  // Bytes: the outcomes written times the size of one outcome in a chunk (an estimate: every outcome
  // here has the same shape).
  const auto one = cotune::tuning_journal::chunk_json("gemm", "M=4096", results, {0}).size();
  s.bytes = s.outcomes * one;
  return s;
}

} // namespace

int main(int argc, char** argv) {
  const std::size_t largest = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
  const auto root = std::filesystem::temp_directory_path() / ("cotune-bench-journal-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  std::filesystem::permissions(root, std::filesystem::perms::owner_all);
  std::printf("%-10s %14s %14s %16s %14s %14s %16s %9s\n", "configs", "whole s", "whole MB", "whole outcomes",
              "chunked s", "chunked MB", "chunked outcomes", "speed-up");
  for (std::size_t n : {100u, 500u, 1000u, 2000u, 5000u}) {
    if (n > largest) break;
    const auto w = whole(root, n);
    const auto c = chunked(root, n);
    std::printf("%-10zu %14.3f %14.1f %16zu %14.3f %14.1f %16zu %8.1fx\n", n, w.seconds, w.bytes / 1e6, w.outcomes,
                c.seconds, c.bytes / 1e6, c.outcomes, w.seconds / c.seconds);
  }
  std::filesystem::remove_all(root);
}
