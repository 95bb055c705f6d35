#pragma once
/// \file `cotune::batch::prediction_report`: how well a tuning database predicts keys nobody tuned, as
/// one self-contained HTML page in the look of batch/html_report.hpp. Per kernel and device, a grid of
/// the keys' problem sizes (columns: the first number of the key; rows: its other numbers) whose
/// cells show side by side the tuned winner and the config predicted from the other keys (leave one
/// out: batch/prediction.hpp), coloured by the prediction's regret, then a table of every key with the
/// full configs and times, and a summary (mean, median and worst regret, the share within 2%). Each
/// key is a `<td class="cell">` in the grid and a `<tr class="key">` in the table, whose id is a valid
/// fragment name.
///
///     cotune::batch::write_prediction_report("predictions.html", db, "app.db.json: predictions");

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <filesystem>
#include <string>
#include <string_view>

#include <cotune/batch/tuning_database.hpp>

namespace cotune::batch {

/// The page of `db`'s held-out predictions. Deterministic for a given database (no clock is read).
[[nodiscard]] COTUNE_DECL std::string prediction_report(const tuning_database& db, std::string_view title);

/// Writes `prediction_report(db, title)` to `file` atomically; throws std::system_error naming the
/// file when it cannot.
COTUNE_DECL void write_prediction_report(const std::filesystem::path& file, const tuning_database& db,
                                         std::string_view title);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/prediction_report.ipp>
#endif
