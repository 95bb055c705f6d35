#pragma once
/// \file `cotune::batch::predict_winner`: a config for a key nobody tuned, from a tuning database's
/// neighbours: the winner of the nearest key (tune/key_distance.hpp: the keys' numbers on a log
/// scale, only between keys of the same shape) of the same kernel on the same device. And
/// `held_out_regret`, what such predictions cost on the keys a database does hold: each key predicted
/// from the others, its prediction's time read from the key's own measurements.
///
///     if (auto p = cotune::batch::predict_winner(db, "matmul", "M=3000, N=3000", "NVIDIA H200")) use(p->winner);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/batch/tuning_database.hpp>
#include <cotune/core/config.hpp>

namespace cotune::batch {

/// A predicted config and where it came from.
struct prediction {
  config winner;
  std::string neighbour; ///< the key whose winner it is
  double distance = 0;   ///< key_distance from the key asked about (0: the key itself is in the database)
  bool launch_options = true; ///< the backend uses configs' launch options (false: the host backend)

  /// The config as its backend sees it: without launch options where it has none.
  [[nodiscard]] std::string winner_text() const { return launch_options ? winner.text() : winner.params_text(); }
};

/// The winner of the nearest key of `kernel` on `device` in `db` (the key itself if it is there),
/// leaving out the entry of `excluded_key`, if named; nothing when no key of the same shape is there.
/// An empty `device` matches every device (for a database of one device).
[[nodiscard]] COTUNE_DECL std::optional<prediction> predict_winner(const tuning_database& db, std::string_view kernel,
                                                                   std::string_view key, std::string_view device,
                                                                   std::string_view excluded_key = {});

/// One held-out key: its tuned winner, the prediction from the other keys, and the prediction's regret.
struct held_out_key {
  std::string kernel, key, device;
  config tuned, predicted;
  std::string neighbour;
  /// The predicted config's median over the tuned winner's, minus 1 (0: the same config or as fast),
  /// from the key's own measurements; nothing when the key's entry holds no time for it (exported
  /// without candidates, or the config was not measured).
  std::optional<double> regret;
  bool launch_options = true; ///< as in the database's entry
  double tuned_ms = 0;                 ///< the tuned winner's median
  std::optional<double> predicted_ms{}; ///< the predicted config's median, where the key's entry holds it

  /// A config as its backend sees it.
  [[nodiscard]] std::string shown(const config& c) const { return launch_options ? c.text() : c.params_text(); }
};

/// Every key of `db` predicted from the others of its kernel and device (leave one out). Keys without
/// a neighbour of their shape are left out.
[[nodiscard]] COTUNE_DECL std::vector<held_out_key> held_out_regret(const tuning_database& db);

/// What held-out predictions cost, over the keys whose regret is known.
struct held_out_summary {
  /// A prediction within 2% of the tuned winner counts as good: about the run-to-run spread of a GPU
  /// kernel's median (the search suite's "near optimal" uses the same bound).
  static constexpr double near = 0.02;
  std::size_t keys = 0;     ///< predicted keys
  std::size_t measured = 0; ///< of those, with a known regret
  std::size_t exact = 0;    ///< the tuned winner predicted (regret 0)
  std::size_t within = 0;   ///< regret at most `near`
  double mean = 0, median = 0, worst = 0;

  [[nodiscard]] static COTUNE_DECL held_out_summary of(const std::vector<held_out_key>& keys);
};

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/prediction.ipp>
#endif
