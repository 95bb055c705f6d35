#pragma once
/// \file Bodies planted for the format-string rule's own test (tests/layout/header_bodies.py): exactly one
/// format string below is not in COTUNE_FMT, in `planted_message`; the others are written as the rule asks.

#include <string>

#include <fmt/core.h>

namespace cotune::planted {

inline std::string planted_message(int x) {
  return fmt::format("planted {}", x);
}

inline std::string kept_message(int x) {
  fmt::print(stderr, COTUNE_FMT("kept {}\n"), x);
  return fmt::format(COTUNE_FMT("kept {} "
                                "and {}"),
                     x, x);
}

} // namespace cotune::planted
