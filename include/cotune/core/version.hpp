#pragma once
/// \file cotune's version, part of every cache key.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

namespace cotune {

#ifdef COTUNE_VERSION_STRING
inline constexpr const char* version = COTUNE_VERSION_STRING;
#else
inline constexpr const char* version = "0.1.0";
#endif
/// Bumped whenever the layout of cache entries or the composition of keys changes.
// 2: frames bind the key directory too; 3: one frame for local and remote entries (checksum + optional MAC)
inline constexpr int cache_format_version = 3;

} // namespace cotune
