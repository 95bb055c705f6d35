#pragma once
/// \file The bodies of bench/measurement.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <string>
#include <vector>

#include <cotune/bench/measurement.hpp>

namespace cotune {

COTUNE_DECL std::vector<double> as_values(const measurement& m) {
  if (m.times.size() != 3) return m.times;
  double method = 0;
  for (std::size_t i = 1; i < std::size(detail::measurement_methods); ++i) {
    const std::string_view name = detail::measurement_methods[i];
    if (m.method == name || (m.method.size() > name.size() && m.method.starts_with(name) &&
                             m.method.compare(name.size(), 2, " x") == 0))
      method = static_cast<double>(i);
  }
  return {m.times[0], m.times[1], m.times[2], m.rsd, static_cast<double>(m.samples), method,
          static_cast<double>(m.batch)};
}

COTUNE_DECL measurement measurement_of_values(std::vector<double> values) {
  measurement m;
  if (values.size() != 7) {
    m.times = std::move(values);
    return m;
  }
  m.times.assign(values.begin(), values.begin() + 3);
  m.rsd = values[3];
  m.samples = static_cast<std::size_t>(values[4]);
  m.batch = std::max<std::size_t>(1, static_cast<std::size_t>(values[6]));
  const auto code = static_cast<std::size_t>(values[5]);
  if (code > 0 && code < std::size(detail::measurement_methods)) {
    m.method = detail::measurement_methods[code];
    if (code >= 3) m.method += " x" + std::to_string(m.batch);
  }
  return m;
}

} // namespace cotune
