#pragma once
/// \file The bodies of tune/tuning_core.hpp's non-template helpers (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/trace.hpp>
#include <cotune/tune/detail/tuning_core.hpp>

namespace cotune::detail {

COTUNE_DECL void emit_event(const std::vector<std::shared_ptr<observer>>& observers, const tuning_event& e) {
  for (const auto& o : observers) o->notify(e);
  static printing_observer printer(stderr, true, true);
  static printing_observer progress(stderr, false, true);
  static printing_observer warnings_only(stderr, false, false);
  if (knobs().autotuning.print.get()) printer.notify(e);
  else if (knobs().autotuning.progress.get()) progress.notify(e);
  else warnings_only.notify(e);
  if (auto* trace = trace_from_knobs()) { // COTUNE_TRACE
    trace->notify(e);
    if (auto failed = trace->take_error()) emit_event(observers, tuning_warning{"COTUNE_TRACE", *std::move(failed)});
  }
}

COTUNE_DECL std::string result_key(const std::string& fingerprint, const std::string& kernel_digest,
                                   const std::string& key_text, const std::vector<config>& pruned,
                                   const search_strategy& search, const search_settings& budget) {
  sha256_hasher h;
  h.field("cotune-tuning-result").field(version).field(std::to_string(cache_format_version));
  h.field(fingerprint).field(kernel_digest);
  h.field(knob_registry::instance().invalidating_text()).field(key_text);
  h.field(std::to_string(pruned.size()));
  for (const auto& c : pruned) h.field(c.text());
  // A budgeted search's winner is the best of what it measured: another strategy, budget or seed
  // must not reuse it. An exhaustive search keeps the keys it always had.
  if (!search.evaluates_all() || budget.limited())
    h.field(
        fmt::format(COTUNE_FMT("search {} {} {} {}{}"), search.name(), budget.evaluations, budget.wall_ms, budget.seed,
                    budget.fraction > 0 ? fmt::format(COTUNE_FMT(" fraction {}"), budget.fraction) : std::string()));
  return to_hex(h.digest());
}

} // namespace cotune::detail
