#pragma once
/// \file `cotune::search_knobs()`: which search strategy a tuning uses, its budget and its seed.

#include <cstdint>
#include <string>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

/// The search knobs (tune_options::search and search_settings override them per tuner).
struct search_knob_group {
  // exhaustive: spaces of tens of candidates (Triton's lists) cost a few seconds to measure whole,
  // and nothing else is sure to find the best; larger spaces choose a strategy and a budget.
  knob<std::string> strategy{
      {.name = "search.strategy", .env = "COTUNE_SEARCH", .fallback = "exhaustive",
       .doc = "which candidates a tuning measures: exhaustive (all, in order), random (uniform sampling), local "
              "(best-first local search over neighbouring parameter values), evolution (genetic algorithm) or bayes "
              "(tree-structured Parzen estimator); all but exhaustive stop at COTUNE_SEARCH_BUDGET",
       .validate = [](const std::string& v) {
         if (v != "exhaustive" && v != "random" && v != "local" && v != "evolution" && v != "bayes")
           throw knob_error(fmt::format("COTUNE_SEARCH={} is not one of exhaustive, random, local, evolution, bayes", v));
       }}};
  knob<std::int64_t> budget{
      {.name = "search.budget", .env = "COTUNE_SEARCH_BUDGET", .fallback = 0,
       .doc = "most candidates a search evaluates (compiles, and measures if they compile); 0 = the strategy's "
              "default (exhaustive: all; others: a quarter of the candidates, at least 32)",
       .validate = detail::at_least<std::int64_t>(0, "COTUNE_SEARCH_BUDGET")}};
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
