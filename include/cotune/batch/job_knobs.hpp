#pragma once
/// \file `cotune::batch::job_knobs()`: where an application finds a shipped tuning database, how it is
/// verified, what a tuner does for a key the database does not hold, and how large a file the job
/// module reads (job files, databases, Triton files) may be and expand to (batch/input_limits.hpp).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::batch {

/// The tuning database and job file knobs.
struct job_knob_group {
  knob<std::optional<std::string>> database{
      {.name = "db.path", .env = "COTUNE_TUNING_DB",
       .doc = "a tuning database file (`cotune db export`) consulted read-only before tuning: a key it holds for "
              "this device launches its winner without tuning; unset = only the cache's imported database"}};
  knob<std::optional<std::string>> secret{
      {.name = "db.secret", .env = "COTUNE_TUNING_DB_SECRET",
       .doc = "shared secret: `cotune db export` signs databases with it (HMAC-SHA256), and unsigned or wrongly "
              "signed databases are refused; unset = databases carry only a checksum",
       .secret = true}};
  // "tune": a database is a head start, never a limit; "default" is for programs that must never
  // spend start-up time tuning (a serving fleet), and launch the kernel's first config instead.
  knob<std::string> fallback{
      {.name = "db.fallback", .env = "COTUNE_TUNING_DB_FALLBACK", .fallback = "tune",
       .doc = "what a tuner does for a key the database does not hold: tune (measure, as without a database) or "
              "default (launch the first config of the candidate list, untuned)",
       .validate = [](const std::string& v) {
         if (v != "tune" && v != "default")
           throw knob_error(fmt::format("COTUNE_TUNING_DB_FALLBACK={} is not tune or default", v));
       }}};
  // 100,000: more than a job is worth tuning exhaustively (at the default budgets, 25 ms of warm-up and
  // 100 ms of runs per candidate, over three hours of measuring), and what a file can expand to and
  // still be read in seconds. Measured with `cotune tune --dry-run` (the dev build, at -O0, 2 loaded
  // cores, 2026-12-04): 10^5 configs x 1 instance in 8.7 s and 204 MB, 1,000 configs x 100 instances
  // in 4.5 s and 11 MB; 10^6 configs took 134 s and 2.3 GB, and 8 axes of 100 values never finished.
  knob<std::int64_t> max_candidates{
      {.name = "job.max_candidates", .env = "COTUNE_JOB_MAX_CANDIDATES", .fallback = 100000,
       .doc = "the most (config, instance) pairs a job file may expand to, over all its kernels (the product of its "
              "axes times its instances, counted before anything is built; a larger job is refused, exit 2); also "
              "the most configs a Triton file, and the most entries and candidates per entry a tuning database, may hold",
       .validate = cotune::detail::at_least<std::int64_t>(1, "COTUNE_JOB_MAX_CANDIDATES")}};
  // 256 MiB: simdjson holds a file and about twice its size again while it is parsed, so under 1 GB;
  // job files are kilobytes, and a database with every candidate takes about 250 bytes a candidate, so
  // 256 MiB holds 10 jobs' exports at the candidate limit. Larger files are more likely a mistake.
  knob<std::int64_t> max_file_bytes{
      {.name = "job.max_file_bytes", .env = "COTUNE_JOB_MAX_FILE_BYTES", .fallback = std::int64_t{256} << 20,
       .doc = "the largest job file, tuning database or Triton autotune file read; a larger one is refused before "
              "it is parsed",
       .validate = cotune::detail::at_least<std::int64_t>(1, "COTUNE_JOB_MAX_FILE_BYTES")}};
};

/// The process's tuning database knobs. (Out of line with COTUNE_SEPARATE_COMPILATION, as `knobs()` is.)
[[nodiscard]] COTUNE_DECL job_knob_group& job_knobs();

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/job_knobs.ipp>
#endif
