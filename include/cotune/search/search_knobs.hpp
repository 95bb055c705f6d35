#pragma once
/// \file `cotune::search_knobs()`: which search strategy a tuning uses, its budget and its seed.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstdint>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/search/search_registry.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune {

namespace detail {
/// COTUNE_SEARCH_BUDGET's text as a budget: "N" (evaluations; 0 = the strategy's default) or "P%"
/// (a share of the candidates, 0 < P <= 100). Throws knob_error saying what it accepts.
[[nodiscard]] COTUNE_DECL search_settings search_budget_of(const std::string& text);
/// Throws knob_error unless `name` is registered (search_registry), listing the names that are.
COTUNE_DECL void check_search_name(const std::string& name);
/// COTUNE_SEARCH's doc: the registered strategies (search_registry) as the group is made.
[[nodiscard]] COTUNE_DECL std::string search_strategy_doc();
} // namespace detail

/// The search knobs (tune_options::search and search_settings override them per tuner).
struct search_knob_group {
  // exhaustive without a budget: spaces of tens of candidates (Triton's lists) cost a few seconds to
  // measure whole, and nothing else is sure to find the best. With a budget (and COTUNE_SEARCH unset),
  // bayes-local: its regret is never above random's on the 10 spaces measured, within a few tenths of
  // a point of the best strategy's elsewhere and far below every other on a selector (docs/search.md).
  knob<std::string> strategy{
      {.name = "search.strategy", .env = "COTUNE_SEARCH", .fallback = "exhaustive",
       .doc = detail::search_strategy_doc(),
       .default_text = "exhaustive, or bayes-local with a budget",
       .validate = detail::check_search_name}};
  knob<std::string> budget{
      {.name = "search.budget", .env = "COTUNE_SEARCH_BUDGET", .fallback = "0",
       .doc = "most candidates a search evaluates (compiles, and measures if they compile): a count (64) or a share "
              "of the candidates (25%); 0 = the strategy's default (exhaustive: all; others: a quarter of the "
              "candidates, at least 32). search_settings' .evaluations or .fraction, when set, win",
       .validate = [](const std::string& v) { (void)detail::search_budget_of(v); }}};
  knob<std::int64_t> time_ms{
      {.name = "search.time_ms", .env = "COTUNE_SEARCH_TIME_MS", .fallback = 0,
       .doc = "wall-clock budget of a search in ms: no new batch of candidates is started after it; 0 = none",
       .validate = detail::at_least<std::int64_t>(0, "COTUNE_SEARCH_TIME_MS")}};
  // 0, not a random device: the same program on the same machine proposes the same candidates.
  knob<std::int64_t> seed{{.name = "search.seed", .env = "COTUNE_SEARCH_SEED", .fallback = 0,
                           .doc = "seed of the search strategy's random numbers (same seed, same proposals)"}};
};

/// The process's search knobs. (Out of line with COTUNE_SEPARATE_COMPILATION, as `knobs()` is.)
[[nodiscard]] COTUNE_DECL search_knob_group& search_knobs();

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search_knobs.ipp>
#endif
