#pragma once
/// \file `cotune::key_distance`: how far apart two tuning keys are, from their texts ("x: float[4096],
/// n=4096"): the distance between their numeric values on a log scale, defined only between keys whose
/// other parts (argument names, element types, strings) are the same. A stand-in for an untuned key
/// (the nearest tuned key's winner), the seeds of a new key's search and a database's prediction for
/// a key nobody tuned all take their neighbours by this one measure.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cotune {

/// A key's text split into its numbers and the rest: "x: float32[4096], n=64" is the shape
/// "x: float32[#], n=#" with the values {4096, 64}. A number is a decimal literal that does not
/// continue a name (the 32 of "float32" is part of the shape).
struct key_shape {
  std::string skeleton;
  std::vector<double> values;

  /// The shape of a key's text.
  [[nodiscard]] COTUNE_DECL static key_shape of(std::string_view key_text);
};

/// The distance between two keys: the Euclidean distance of their numeric values, each mapped to
/// sign(v) log2(1 + |v|) (so that 1024 -> 2048 is as far as 64 -> 128, and 0 and negative values are
/// allowed); nothing when their shapes differ (other element types, other arguments), since a winner
/// does not carry over between them. 0 for the same key.
[[nodiscard]] COTUNE_DECL std::optional<double> key_distance(std::string_view a, std::string_view b);

/// The same distance between two shapes made once (for ranking many keys against one).
[[nodiscard]] COTUNE_DECL std::optional<double> key_distance(const key_shape& a, const key_shape& b);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/key_distance.ipp>
#endif
