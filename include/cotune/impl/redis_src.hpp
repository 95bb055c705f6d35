#pragma once
/// \file The Redis module's separately compiled part, for COTUNE_SEPARATE_COMPILATION: a program that uses
/// the module and compiles <cotune/impl/src.hpp> itself (without CMake) compiles this header in one file
/// too. The `cotune::cotune_separate` CMake target holds it when the module is built.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/redis_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cotune/redis/redis_knobs.ipp>
#include <cotune/redis/redis_backend.ipp>
#include <cotune/redis/redis_lease.ipp>
#include <cotune/redis/job_ledger.ipp>
#include <cotune/redis/redis_wire.ipp>
