#pragma once
/// \file `cotune::knobs()`: every core setting, grouped, each bound to an environment variable.
/// docs/knobs.md lists them all, generated from this registry by tools/knob_reference.cpp (a test checks it).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>

namespace cotune {

namespace detail {

/// $XDG_CACHE_HOME, else $HOME/.cache, else the working directory's .cache.
[[nodiscard]] COTUNE_DECL std::string user_cache_root();
/// The defaults of cache.dir, cache.dump_dir and cache.override_dir: cotune, cotune-dump and
/// cotune-override under user_cache_root().
[[nodiscard]] COTUNE_DECL std::string default_cache_dir();
[[nodiscard]] COTUNE_DECL std::string default_dump_dir();
[[nodiscard]] COTUNE_DECL std::string default_override_dir();

/// Throws the knob_error of a value below its knob's minimum.
[[noreturn]] COTUNE_DECL void throw_below_minimum(const char* env, const std::string& value, const std::string& minimum);

/// A knob's `validate` that refuses values below `minimum`.
template <class T>
auto at_least(T minimum, const char* env) {
  return [minimum, env](const T& v) {
    // Written as !(v >= minimum) so that a NaN set in code is refused too.
    if (!(v >= minimum)) throw_below_minimum(env, knob_text(v), knob_text(minimum));
  };
}

} // namespace detail

/// Where cotune keeps files.
struct cache_knob_group {
  knob<std::string> dir{{.name = "cache.dir", .env = "COTUNE_CACHE_DIR", .doc = "root of the file cache",
                         .computed_default = detail::default_cache_dir,
                         .default_text = "$XDG_CACHE_HOME/cotune, else ~/.cache/cotune"}};
  knob<std::string> dump_dir{{.name = "cache.dump_dir", .env = "COTUNE_DUMP_DIR",
                              .doc = "where dump managers write intermediate files",
                              .computed_default = detail::default_dump_dir,
                              .default_text = "$XDG_CACHE_HOME/cotune-dump"}};
  knob<std::string> override_dir{{.name = "cache.override_dir", .env = "COTUNE_OVERRIDE_DIR",
                                  .doc = "where override managers read user-supplied files (read-only)",
                                  .computed_default = detail::default_override_dir,
                                  .default_text = "$XDG_CACHE_HOME/cotune-override"}};
  // Unset: the root's permission check already keeps other local users out, and a key makes entries
  // unreadable to any process without it (a cache shared by design, a key lost with a home directory).
  knob<std::optional<std::string>> local_key_file{
      {.name = "cache.local_key_file", .env = "COTUNE_CACHE_KEY_FILE",
       .doc = "a per-user secret file (created 0600 on first use) whose key turns every entry's checksum into an "
              "HMAC, so entries planted by anyone without it are refused; unset = checksums only"}};
  knob<std::optional<std::string>> local_key{
      {.name = "cache.local_key", .env = "COTUNE_CACHE_KEY",
       .doc = "the local cache key itself (e.g. from a CI secret store); overrides cache.local_key_file",
       .secret = true}};
  // 0: eviction walks the whole cache, and a limit right for a laptop is wrong for a build farm; with
  // no limit the cache grows as Triton's does, and `cotune cache gc --max-bytes` trims it on demand.
  knob<std::int64_t> max_bytes{{.name = "cache.max_bytes", .env = "COTUNE_CACHE_MAX_BYTES", .fallback = 0,
                                .doc = "size limit of the file cache, held by concurrent writers (a shared ledger): "
                                       "the least recently used entries not loaded by a live process are evicted "
                                       "before a put would cross it; 0 = no limit",
                                .validate = detail::at_least<std::int64_t>(0, "COTUNE_CACHE_MAX_BYTES")}};
  // 600 s: a temporary file's name says which process of which host writes it, so a dead writer's
  // file on this host goes at once; the age only matters for writers on other hosts (a shared mount,
  // where flock may not cross machines), and there it must outlast the slowest write, a 100 MB fatbin
  // at 1 MB/s taking 100 s: 6x headroom.
  knob<std::int64_t> tmp_max_age_s{{.name = "cache.tmp_max_age_s", .env = "COTUNE_CACHE_TMP_MAX_AGE_S",
                                    .fallback = 600,
                                    .doc = "temporary files of writers on other hosts older than this (and unlocked) "
                                           "are removed by later writers and by `cotune cache gc`; a dead writer's "
                                           "on this host go at once",
                                    .validate = detail::at_least<std::int64_t>(0, "COTUNE_CACHE_TMP_MAX_AGE_S")}};
  // false: every entry is checksummed and renamed into place whole, so a crash or a power loss can
  // lose an entry (a miss, rewritten by the next put) but never serve a broken one; ccache makes the
  // same choice. The flush cost 4.9-6.4 ms per put at the median on ext4 (issue 16), against ~0.1 ms.
  knob<bool> fsync{{.name = "cache.fsync", .env = "COTUNE_CACHE_FSYNC", .fallback = false,
                    .doc = "flush every cache entry to disk before renaming it into place (durability over "
                           "speed; see benchmarks/RESULTS.md for the cost)"}};
};

/// How the autotuner behaves.
struct autotuning_knob_group {
  knob<bool> cache{{.name = "autotuning.cache", .env = "COTUNE_CACHE_AUTOTUNING", .fallback = false,
                    .doc = "store tuning results on disk (and remotely) for every tuner, not only those that ask"}};
  knob<bool> print{{.name = "autotuning.print", .env = "COTUNE_PRINT_AUTOTUNING", .fallback = false,
                    .doc = "print a summary and a table of candidates after each tuning"}};
  knob<bool> progress{{.name = "autotuning.progress", .env = "COTUNE_PROGRESS", .fallback = true,
                       .doc = "show a progress line on stderr while tuning, when stderr is a terminal"}};
  knob<int> compile_threads{{.name = "autotuning.compile_threads", .env = "COTUNE_COMPILE_THREADS", .fallback = 0,
                             .doc = "threads of the compile pool; 0 = hardware threads",
                             .validate = detail::at_least(0, "COTUNE_COMPILE_THREADS")}};
  // on: the safe default (issue 33). A crash or a hang in a candidate costs that candidate alone, on the
  // first run. What it costs, measured side by side (benchmarks/RESULTS.md, "Default isolation"): one
  // fork per host tuning and a round trip per candidate to its persistent copy, a round trip per GPU
  // candidate to the device's worker; only each candidate's first run (verification and screening) is
  // isolated, the finalists that ran cleanly there are measured again in fair interleaved rounds here.
  knob<std::string> isolate{{.name = "autotuning.isolate", .env = "COTUNE_ISOLATE", .fallback = "on",
                             .doc = "run each candidate's first contact (verification and screening) in another "
                                    "process, so that a crash or a hang costs that candidate alone (host: a forked "
                                    "copy; CUDA, HIP: a worker process per device with its own context): `on` (the "
                                    "default: wherever the backend and the options allow, with one warning per "
                                    "tuning where they do not), `off` (nothing forked: a crash ends the process), or "
                                    "`auto` (off until a kernel has crashed: a journal left by a process that died "
                                    "mid-tuning, or a quarantined candidate)",
                             .validate = [](const std::string& v) {
                               if (v != "off" && v != "on" && v != "auto")
                                 throw knob_error(fmt::format("COTUNE_ISOLATE={} is not one of off, on, auto", v));
                             }}};
  // 120 s: an optimised NVRTC compile of a large GEMM takes ~5 s on an H200 host; 24x headroom.
  knob<std::int64_t> compile_timeout_ms{{.name = "autotuning.compile_timeout_ms", .env = "COTUNE_COMPILE_TIMEOUT_MS",
                                         .fallback = 120000,
                                         .doc = "a compile running longer is cancelled and recorded as a timeout; 0 = no limit",
                                         .validate = detail::at_least<std::int64_t>(0, "COTUNE_COMPILE_TIMEOUT_MS")}};
  // wait: the safe default (issue 37): a tuned call never runs an untuned config unless asked to.
  knob<std::string> first_call{{.name = "autotuning.first_call", .env = "COTUNE_FIRST_CALL", .fallback = "wait",
                                .doc = "what a call for a key not tuned yet does: `wait` (the default: it tunes the "
                                       "key, then launches the winner) or `serve` (it launches a stand-in at once: the "
                                       "shipped database's winner, else the nearest tuned key's, else the options' "
                                       "default config, else the first candidate; the key is tuned in the background "
                                       "and its winner replaces the stand-in for every later call; docs/serving.md); "
                                       "tune_options::first_call overrides it",
                                .validate = [](const std::string& v) {
                                  if (v != "wait" && v != "serve")
                                    throw knob_error(fmt::format("COTUNE_FIRST_CALL={} is not one of wait, serve", v));
                                }}};
  // 0.1: a background tuning's measurements then hold the device for at most a tenth of the wall
  // time, so a program whose own kernels keep the device busy loses at most ~10% of its throughput
  // while a key tunes beside it (issue 37's target: 90%; benchmarks/bench_cuda_background measures it).
  knob<double> background_share{{.name = "autotuning.background_share", .env = "COTUNE_BACKGROUND_SHARE",
                                 .fallback = 0.1,
                                 .doc = "the share of a device's time, in (0, 1], that background tunings "
                                        "(COTUNE_FIRST_CALL=serve) measure in: after each measurement the device is "
                                        "left to the program for (1 - share) / share of its time, without holding "
                                        "cotune's device thread; 1 = no pauses. Blocking tunings never pause; "
                                        "tune_options::background_share overrides it",
                                 .validate = [](const double& v) {
                                   if (!(v > 0 && v <= 1))
                                     throw knob_error(fmt::format(
                                         "COTUNE_BACKGROUND_SHARE={} is not a share of device time in (0, 1] (0.1 "
                                         "= a tenth)",
                                         v));
                                 }}};
  // Unset: a trace costs a span per phase per candidate in memory and a file write per tuning.
  knob<std::optional<std::string>> trace{{.name = "autotuning.trace", .env = "COTUNE_TRACE",
                                          .doc = "write every measured tuning's timeline (each candidate's compile, "
                                                 "load, verify and measurements, per thread and device) to this "
                                                 "file as a Chrome trace (Perfetto, chrome://tracing); `%p` = the "
                                                 "process id; see docs/tracing.md"}};
};

/// Benchmarking budgets (do_bench's warmup and rep, in milliseconds).
struct bench_knob_group {
  // Triton's do_bench defaults (spec §8.2).
  knob<double> warmup_ms{{.name = "bench.warmup_ms", .env = "COTUNE_BENCH_WARMUP_MS", .fallback = 25.0,
                          .doc = "warm-up budget per candidate, in ms",
                          .validate = detail::at_least(0.0, "COTUNE_BENCH_WARMUP_MS")}};
  knob<double> rep_ms{{.name = "bench.rep_ms", .env = "COTUNE_BENCH_REP_MS", .fallback = 100.0,
                       .doc = "measurement budget per candidate, in ms",
                       .validate = detail::at_least(0.0, "COTUNE_BENCH_REP_MS")}};
  // 10 ms: a tenth of the full budget. A 20 us GPU kernel still gets ~400 timed runs and a 1 ms CPU
  // kernel ~10, enough to rank candidates whose medians differ by more than the margin below.
  knob<double> screen_rep_ms{{.name = "bench.screen_rep_ms", .env = "COTUNE_BENCH_SCREEN_REP_MS", .fallback = 10.0,
                              .doc = "budget of the screening pass that measures every candidate before the finalists get the full budget; 0 = measure every candidate fully (Triton's behaviour)",
                              .validate = detail::at_least(0.0, "COTUNE_BENCH_SCREEN_REP_MS")}};
  // 15%: run-to-run noise of screening medians measured here stays under 5% (H200 GEMMs, CPU matmuls),
  // so the true winner is re-measured with a wide margin to spare.
  knob<double> screen_margin{{.name = "bench.screen_margin", .env = "COTUNE_BENCH_SCREEN_MARGIN", .fallback = 0.15,
                              .doc = "candidates whose screening median is within this fraction of the best are measured again with the full budget",
                              .validate = detail::at_least(0.0, "COTUNE_BENCH_SCREEN_MARGIN")}};
  // 4: in the H200 GEMM tables (examples/04), full-budget medians of the top four screening
  // candidates lie within 5% of each other and the full-budget winner is always among them.
  knob<int> screen_keep{{.name = "bench.screen_keep", .env = "COTUNE_BENCH_SCREEN_KEEP", .fallback = 4,
                         .doc = "at most this many finalists (the best by screening median) get the full budget",
                         .validate = detail::at_least(1, "COTUNE_BENCH_SCREEN_KEEP")}};
  // 10 s: a candidate 100x slower than a typical 1 ms kernel still fits its 100 ms budget many times.
  knob<std::int64_t> timeout_ms{{.name = "bench.timeout_ms", .env = "COTUNE_BENCH_TIMEOUT_MS", .fallback = 10000,
                                 .doc = "a candidate whose first run takes longer is recorded as a timeout and not measured further; 0 = no limit",
                                 .validate = detail::at_least<std::int64_t>(0, "COTUNE_BENCH_TIMEOUT_MS")}};
  // 0.5%: nvbench's default max-noise. Not yet measured here (issue 12's figures will be).
  knob<double> noise_target{{.name = "bench.noise_target", .env = "COTUNE_BENCH_NOISE_TARGET", .fallback = 0.005,
                             .doc = "a measurement stops once its samples' relative standard deviation is under this "
                                    "(or has settled above it), or when bench.rep_ms is spent, whichever is first; "
                                    "0 = always spend the budget",
                             .validate = detail::at_least(0.0, "COTUNE_BENCH_NOISE_TARGET")}};
  // 10: the rsd of 10 samples is itself known to about +-24% (1 / sqrt(2 (n - 1))), enough to tell
  // a 0.3% kernel from a 3% one; each extra sample costs a 1 ms kernel 1 ms more per candidate.
  knob<int> min_samples{{.name = "bench.min_samples", .env = "COTUNE_BENCH_MIN_SAMPLES", .fallback = 10,
                         .doc = "the noise test of bench.noise_target applies from this many samples on",
                         .validate = detail::at_least(2, "COTUNE_BENCH_MIN_SAMPLES")}};
  // 200 us: an event pair around one launch adds ~6-7 us on an H200 against back-to-back launches (a
  // 1.3 us kernel read 5.8 us, a 100 us one +6.9%, a 1 ms one +0.7%; benchmarks/RESULTS.md, issue 12),
  // so per-launch timing stays within ~3.5% only from ~200 us on. With 200, every size measured there
  // was within 1.5% of a graph of 1000 launches.
  knob<double> batch_below_us{{.name = "bench.batch_below_us", .env = "COTUNE_BENCH_BATCH_BELOW_US", .fallback = 200.0,
                               .doc = "GPU kernels whose first estimate is under this many us are timed in batches (a "
                                      "graph of N launches, one L2 flush before each batch) and the batch time divided "
                                      "by N; longer ones are timed per launch with a flush before each; "
                                      "0 = always per launch (Triton's do_bench)",
                               .validate = detail::at_least(0.0, "COTUNE_BENCH_BATCH_BELOW_US")}};
  // 5 ms: Triton's 25 ms warm-up gets a GPU's clocks up from idle; a GPU that measured the previous
  // candidate moments ago is up already, and the 25 ms were most of a noise-stopped measurement's
  // 34 ms on the H200 (issue 12 item 2).
  knob<double> warm_warmup_ms{{.name = "bench.warm_warmup_ms", .env = "COTUNE_BENCH_WARM_WARMUP_MS", .fallback = 5.0,
                               .doc = "a GPU that finished a measurement less than 100 ms ago (in a tuning, every "
                                      "candidate but the first on each device) warms up for at most this many ms "
                                      "instead of bench.warmup_ms; set it to bench.warmup_ms for a full warm-up "
                                      "every time (Triton's)",
                               .validate = detail::at_least(0.0, "COTUNE_BENCH_WARM_WARMUP_MS")}};
  // 0 (off) until measured where it is meant to help: on the CPU demo (example 02) 500 ms of settling
  // cost 0.5 s of a 9-10 s tuning (1.25x -> 1.37x its lower bound, benchmarks/RESULTS.md) and no CPU
  // needs it; its benefit on a cold GPU (issue 35's S2 runs, scripts/s2-cold-runs) awaits the H200 A/B.
  knob<double> settle_ms{{.name = "bench.settle_ms", .env = "COTUNE_BENCH_SETTLE_MS", .fallback = 0.0,
                          .doc = "before the finals' timed rounds, untimed rounds of the finalists until every "
                                 "median moved by at most 1% between two rounds (the device's clocks have "
                                 "settled), or this many ms are spent (500 for a GPU that starts cold); 0 = no settling",
                          .validate = detail::at_least(0.0, "COTUNE_BENCH_SETTLE_MS")}};
};

/// How host (CPU) kernels are built.
struct build_knob_group {
  knob<std::optional<std::string>> cxx{{.name = "build.cxx", .env = "CXX",
                                        .doc = "C++ compiler for host kernels; unset = c++, g++, clang++ on PATH"}};
  // -O3 -march=native: host kernels are tuned for the machine they run on; the CPU model is part of
  // the host backend's fingerprint, so a shared cache never serves a binary built for another CPU.
  knob<std::string> cxxflags{{.name = "build.cxxflags", .env = "COTUNE_HOST_CXXFLAGS", .fallback = "-O3 -march=native",
                              .doc = "flags for host kernels (split on spaces)", .invalidating = true}};
};

/// Process-wide behaviour.
struct runtime_knob_group {
  knob<bool> debug{{.name = "runtime.debug", .env = "COTUNE_DEBUG", .fallback = false,
                    .doc = "keep compiler inputs and print each compile command", .invalidating = true}};
  // Unset: a program without a file made at build time compiles every GPU candidate at run time.
  knob<std::optional<std::string>> precompiled_file{
      {.name = "runtime.precompiled_file", .env = "COTUNE_PRECOMPILED_FILE",
       .doc = "a file of GPU kernels built ahead of time by cotune_precompile() (CMake) or `cotune precompile`: a "
              "candidate found there, made from the same source, config and options for the device's architecture, "
              "is loaded instead of compiled by NVRTC or hiprtc (docs/cuda.md, \"Ahead-of-time compilation\"); "
              "unset = none"}};
  // prefer: a file that lacks a candidate (a config added since the build) costs a compile, not a failure.
  knob<std::string> precompiled{
      {.name = "runtime.precompiled", .env = "COTUNE_PRECOMPILED", .fallback = "prefer",
       .doc = "how GPU backends use COTUNE_PRECOMPILED_FILE: `prefer` (the default: candidates the file lacks, or "
              "holds made from something else, are compiled at run time, with a warning for the latter), `only` "
              "(never the runtime compiler, which is not even loaded: such a candidate fails with an error naming "
              "its config, the architecture and the file), `off` (the file is ignored)",
       .validate = [](const std::string& v) {
         if (v != "off" && v != "prefer" && v != "only")
           throw knob_error(fmt::format("COTUNE_PRECOMPILED={} is not one of off, prefer, only", v));
       }}};
};

/// All core knob groups. Optional modules (cuda, redis) add their own groups to the registry.
struct knob_groups {
  cache_knob_group cache;
  autotuning_knob_group autotuning;
  bench_knob_group bench;
  build_knob_group build;
  runtime_knob_group runtime;
};

/// The process's knobs. (Out of line with COTUNE_SEPARATE_COMPILATION: the groups' constructors, a
/// knob each, are then compiled once, in knobs.ipp, not in every file that reads a knob.)
[[nodiscard]] COTUNE_DECL knob_groups& knobs();

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/knobs/knobs.ipp>
#endif
