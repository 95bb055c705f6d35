#pragma once
/// \file `cotune::shipped_winner_source()`: where a tuner looks for a winner made elsewhere before it
/// tunes a key (a tuning database shipped with the application). The tuner knows no database format:
/// whoever provides one installs a lookup here once, during static initialisation
/// (cotune/batch/shipped_database.hpp installs the `COTUNE_TUNING_DB` lookup; <cotune/cotune.hpp>
/// includes it).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

/// Given a kernel's name, the key's text, the device's name and the candidates, the result to adopt
/// (its winner among these candidates), or nothing: then the tuner tunes. Throws to say the source is
/// unusable (a damaged database): the tuner reports a warning and tunes.
using winner_source = std::function<std::optional<tuning_result>(
    std::string_view kernel, std::string_view key_text, std::string_view device, const std::vector<config>& candidates)>;

/// The process's source of shipped winners; empty when none is installed.
[[nodiscard]] inline winner_source& shipped_winner_source() {
  static winner_source source;
  return source;
}

} // namespace cotune
