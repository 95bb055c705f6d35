#pragma once
/// \file `cotune::kernel_source`: what a backend compiles.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <string>
#include <vector>

#include <cotune/detail/hashing.hpp>

namespace cotune {

/// A kernel to compile: its source text, the symbol to call, and how to compile it.
struct kernel_source {
  std::string name;                      ///< a C identifier; used in messages and cache file names
  std::string code;                      ///< the source text
  std::string entry;                     ///< host: an extern "C" function; CUDA: a kernel name or name expression
  std::vector<std::string> options{};    ///< extra compiler options
  std::vector<std::string> include_dirs{};

  /// SHA-256 hex over everything above: the kernel's part of every cache key.
  [[nodiscard]] std::string digest() const;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/core/kernel_source.ipp>
#endif
