#pragma once
/// \file How cotune is compiled: header-only (the default) or separately (Asio's convention).
///
/// Header-only: every function body is in the headers (their `.ipp` files are included at the end of
/// each header) and `COTUNE_DECL` is `inline`. Separate: define `COTUNE_SEPARATE_COMPILATION` in every
/// translation unit of the program (the `cotune::cotune_separate` CMake target does it) and compile
/// one file containing `#include <cotune/impl/src.hpp>`; the `.ipp` bodies, Crypto++ and most of
/// simdjson are then compiled once, in that file, instead of in every file that includes cotune.

#if defined(COTUNE_SEPARATE_COMPILATION)
#define COTUNE_HEADER_ONLY 0
#define COTUNE_DECL
#else
#define COTUNE_HEADER_ONLY 1
#define COTUNE_DECL inline
#endif
