#pragma once
/// \file How cotune is compiled: header-only (the default) or separately (Asio's convention).
///
/// Header-only: every function body is in the headers (their `.ipp` files are included at the end of
/// each header) and `COTUNE_DECL` is `inline`. Separate: define `COTUNE_SEPARATE_COMPILATION` in every
/// translation unit of the program (the `cotune::cotune_separate` CMake target does it) and compile
/// one file containing `#include <cotune/impl/src.hpp>`; the `.ipp` bodies, Crypto++ and most of
/// simdjson are then compiled once, in that file, instead of in every file that includes cotune.
///
/// Every cotune header includes this one before any code of its own, so that a compile without C++20
/// stops at the one message below instead of a cascade from the first concept (`std::integral` has not
/// been declared, ...). `_MSVC_LANG` because MSVC leaves `__cplusplus` at 199711L unless /Zc:__cplusplus.

#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 202002L
#error "cotune needs C++20 (-std=c++20): compile with -std=c++20 or later (CMake: target_compile_features(<target> PRIVATE cxx_std_20); cotune::cotune sets it for its users)"
// #error lets the compile go on into hundreds of errors from cotune's concepts; a missing header is
// fatal in every compiler, so the message above stays the last thing but one on the screen.
#include <cotune_stops_here_because_it_needs_cpp20>
#endif

#if defined(COTUNE_SEPARATE_COMPILATION)
#define COTUNE_HEADER_ONLY 0
#define COTUNE_DECL
#else
#define COTUNE_HEADER_ONLY 1
#define COTUNE_DECL inline
#endif

/// A format string in a `.ipp` body: checked at compile time (fmt's consteval check) where the bodies are
/// compiled once, with COTUNE_SEPARATE_COMPILATION (the `cotune_separate` library, which `make test`
/// builds, so every string is checked there), and read at run time in a header-only file, which
/// compiles every body whether it calls it or not: checking the ~500 strings of the bodies cost each
/// file that includes cotune about 1.2 s of the umbrella's 8.2 s (g++ 12 -O2, issue 38). Define
/// COTUNE_CHECK_FORMAT_STRINGS to check them header-only too. Bodies that the separate library does not
/// compile (templates in headers) keep plain literals, checked wherever they are instantiated.
#if COTUNE_HEADER_ONLY && !defined(COTUNE_CHECK_FORMAT_STRINGS)
#define COTUNE_FMT(s) ::fmt::runtime(s)
#else
#define COTUNE_FMT(s) s
#endif
