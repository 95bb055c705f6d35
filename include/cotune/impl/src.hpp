#pragma once
/// \file The bodies of cotune's non-template functions, for COTUNE_SEPARATE_COMPILATION (Asio's
/// convention): compile exactly one file of the program with
///
///     #include <cotune/impl/src.hpp>
///
/// and define COTUNE_SEPARATE_COMPILATION in every file (the `cotune::cotune_separate` CMake target
/// does both). Header-only programs (the default) must not include this header.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp>

#include <cotune/detail/hashing.ipp>
#include <cotune/detail/json.ipp>
#include <cotune/knobs/knobs.ipp>
#include <cotune/cache/file_cache.ipp>
#include <cotune/job/tuning_database.ipp>
#include <cotune/job/shipped_database.ipp>
