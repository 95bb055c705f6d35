#pragma once
/// \file The DLPack module's separately compiled part, for COTUNE_SEPARATE_COMPILATION: a program that uses
/// the module and compiles <cotune/impl/src.hpp> itself (without CMake) compiles this header in one file
/// too. The `cotune::cotune_separate` CMake target holds it when the module is built.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/dlpack_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cotune/dlpack/tensor_facts.ipp>
