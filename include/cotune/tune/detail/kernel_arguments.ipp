#pragma once
/// \file The bodies of tune/detail/kernel_arguments.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/tune/detail/kernel_arguments.hpp>

namespace cotune::detail {

COTUNE_DECL std::uint64_t value_word(const value& v) {
  if (v.is_int()) return static_cast<std::uint64_t>(v.as_int());
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_double()) return std::bit_cast<std::uint64_t>(v.as_double());
  return std::hash<std::string>{}(v.as_string());
}

} // namespace cotune::detail
