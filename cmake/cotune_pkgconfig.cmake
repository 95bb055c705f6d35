# pkg-config files for builds without CMake, installed beside the CMake package:
#   cotune.pc        the core: g++ -std=c++20 main.cpp $(pkg-config --cflags --libs cotune)
#   cotune-compiled.pc  the core compiled once (libcotune.a, COTUNE_SEPARATE_COMPILATION), when installed
#   cotune-redis.pc  with cotune::redis (Requires cotune and hiredis)
#   cotune-cuda.pc   with cotune::cuda (the CUDA headers' directory found here)
# Requires names the dependencies' own pkg-config modules, as pkg-config knows them here (Crypto++ is
# libcrypto++ on Debian, libcryptopp elsewhere); Boost ships no module, so its include directory goes
# into Cflags unless the compiler searches it anyway. The prefix is the one `cmake --install`
# installs into (--prefix and all): the files are written at install time.
# No COTUNE_VERSION_STRING define, unlike the CMake targets: a quoted define does not survive
# `$(pkg-config ...)` in a shell (pkg-config prints it escaped, and the shell does not unescape a
# substitution), and core/version.hpp holds the same version (packaging/pkg_config checks it).
include_guard(GLOBAL)

set(COTUNE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_DATADIR}/pkgconfig" CACHE STRING
    "Where cotune's pkg-config files are installed (relative to the install prefix)")

find_package(PkgConfig QUIET)

# The first module of ARGN that pkg-config knows here, else the first one (with a note).
function(cotune_pc_module out what)
  if(PKG_CONFIG_FOUND)
    pkg_search_module(COTUNE_PC_${what} QUIET ${ARGN})
    if(COTUNE_PC_${what}_FOUND)
      set(${out} "${COTUNE_PC_${what}_MODULE_NAME}" PARENT_SCOPE)
      return()
    endif()
  endif()
  list(GET ARGN 0 first)
  message(STATUS "cotune: pkg-config knows none of '${ARGN}' here; the installed cotune .pc files require '${first}'")
  set(${out} "${first}" PARENT_SCOPE)
endfunction()

cotune_pc_module(cotune_pc_fmt fmt fmt)
cotune_pc_module(cotune_pc_simdjson simdjson simdjson)
cotune_pc_module(cotune_pc_cryptopp cryptopp libcrypto++ libcryptopp cryptopp)
set(COTUNE_PC_REQUIRES "${cotune_pc_fmt} ${cotune_pc_simdjson} ${cotune_pc_cryptopp}")

set(COTUNE_PC_CFLAGS "")
get_target_property(cotune_pc_boost_include Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
foreach(dir IN LISTS cotune_pc_boost_include)
  if(dir AND NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(APPEND COTUNE_PC_CFLAGS " -I${dir}")
  endif()
endforeach()
set(COTUNE_PC_LIBS "")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND COTUNE_PC_LIBS " -l${lib}")
endforeach()

# Filled in at install time: the second configure_file (in the install script) replaces it.
set(COTUNE_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(COTUNE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(COTUNE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(COTUNE_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(COTUNE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()

set(cotune_pc_files cotune)
if(COTUNE_BUILD_SEPARATE AND PROJECT_IS_TOP_LEVEL) # installed with the package (CMakeLists.txt)
  list(APPEND cotune_pc_files cotune-compiled)
endif()
if(COTUNE_HAS_REDIS)
  cotune_pc_module(COTUNE_PC_HIREDIS hiredis hiredis)
  list(APPEND cotune_pc_files cotune-redis)
endif()
if(COTUNE_HAS_CUDA)
  list(APPEND cotune_pc_files cotune-cuda)
endif()
foreach(pc IN LISTS cotune_pc_files)
  set(template "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc.in")
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in" "${template}" @ONLY)
  install(CODE "configure_file(\"${template}\" \"${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc\" @ONLY)")
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc" DESTINATION "${COTUNE_INSTALL_PKGCONFIGDIR}")
endforeach()

unset(cotune_pc_files)
unset(cotune_pc_boost_include)
