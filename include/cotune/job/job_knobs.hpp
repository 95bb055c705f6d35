#pragma once
/// \file `cotune::job::job_knobs()`: where an application finds a shipped tuning database, how it is
/// verified, and what a tuner does for a key the database does not hold.

#include <optional>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::job {

/// The tuning database knobs.
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
};

/// The process's tuning database knobs. (Out of line with COTUNE_SEPARATE_COMPILATION, as `knobs()` is.)
[[nodiscard]] COTUNE_DECL job_knob_group& job_knobs();

} // namespace cotune::job

#if COTUNE_HEADER_ONLY
#include <cotune/job/job_knobs.ipp>
#endif
