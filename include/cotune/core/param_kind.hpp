#pragma once
/// \file `cotune::param_kind`: whether a parameter's values have an order a search may step along.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <map>
#include <string>

namespace cotune {

/// How a search treats a parameter's values.
enum class param_kind {
  /// Numbers with an order (tile sizes, warps, stages): a step goes to the next value up or down, and
  /// nearby values are expected to perform alike. The default for numbers.
  ordered,
  /// Unrelated choices (an algorithm selector, a layout name, a flag): no value is "next to" another,
  /// so a step may go to any other value. The default for strings and booleans; numbers only when
  /// declared (`config_space::categorical`, a job file's "categorical").
  categorical,
};

/// Declared kinds by parameter name (a launch option as `launch.num_warps`, ...); a parameter left
/// out takes its default (strings and booleans categorical, numbers ordered).
using param_kinds = std::map<std::string, param_kind>;

} // namespace cotune
