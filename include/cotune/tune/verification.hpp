#pragma once
/// \file Output verification: `tune_options::verify` sees each candidate's outputs after one run,
/// before it is timed; a candidate it rejects is recorded as `wrong_result` and never wins.
/// `compare_outputs` is the usual check: a candidate's output against a reference.
///
///     opts.verify = [&](const cotune::config&, const float* x, const float* y, float* out, int n)
///         -> std::optional<std::string> {
///       return cotune::compare_outputs(std::span<const float>(reference), std::span<const float>(out, n));
///     };

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>

namespace cotune {

/// A candidate computed the wrong answer (what `verify` said). Recorded, never fatal.
class wrong_result : public error {
public:
  using error::error;
};

/// Tolerances of `compare_outputs` for floating-point elements: `actual` matches `expected` when
/// |actual - expected| <= atol + rtol * |expected| (numpy's `isclose`). The defaults suit float32
/// results whose configs reorder a reduction (split-k, tile sizes change the summation order):
/// each reordering moves a sum of k terms by about k * 2^-24 relative, so 1e-5 relative covers k in
/// the hundreds and 1e-6 absolute covers results near zero. For half precision use about 1e-2 and
/// 1e-3; for bitwise-identical kernels, 0 and 0. NaN matches NaN only (a NaN where a number is
/// expected is a mismatch). Integers compare exactly.
struct tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};

/// Nothing if `actual` matches `expected` element by element, else the first differing element:
/// "element 17: expected 1.5, got 1.25 (tolerance 1e-06 + 1e-05 * |expected|)", or the sizes.
template <class T, class U>
[[nodiscard]] std::optional<std::string> compare_outputs(std::span<const T> expected, std::span<const U> actual,
                                                         tolerance tol = {}) {
  if (expected.size() != actual.size())
    return fmt::format("the output has {} elements, the reference {}", actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if constexpr (std::is_floating_point_v<T> || std::is_floating_point_v<U>) {
      const double e = static_cast<double>(expected[i]), a = static_cast<double>(actual[i]);
      if (std::isnan(e) && std::isnan(a)) continue;
      if (!(std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e)))
        return fmt::format("element {}: expected {}, got {} (tolerance {} + {} * |expected|)", i, e, a, tol.atol, tol.rtol);
    } else {
      if (!(expected[i] == actual[i])) return fmt::format("element {}: expected {}, got {}", i, expected[i], actual[i]);
    }
  }
  return std::nullopt;
}

} // namespace cotune
