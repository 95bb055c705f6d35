# Runs one packaging test as a CTest test: `cmake -P run_consumer.cmake` with
#   CONSUMER            find_package | add_subdirectory | fetch_content | pkg_config
#   CONSUMER_SOURCE_DIR the consumer project (tests/packaging/<CONSUMER>; pkg_config has none)
#   WORK_DIR            a scratch directory, emptied first
#   COTUNE_SOURCE_DIR   cotune's source tree
#   COTUNE_VERSION      the version the consumer must get
#   GENERATOR, MAKE_PROGRAM, CXX_COMPILER   the outer build's, so the consumer builds the same way
#   CUDA_COMPILER       the outer build's nvcc, or empty: find_package's consumer then adds kernels nvcc compiles
#   PREFIX_PATH         the outer build's CMAKE_PREFIX_PATH, '|'-separated (where dependencies live)
#   PKG_CONFIG          pkg-config (pkg_config only)
#   INSTALLED_PREFIX    the prefix find_package's test installed into (pkg_config only; its fixture)
# find_package first configures cotune on its own, builds it and installs it into WORK_DIR/prefix, as
# the README tells a user to. Then its consumer project is configured and built, its program linking
# the installed cotune::compiled (COTUNE_SEPARATE_COMPILATION), and run. The pkg_config consumer uses
# that install: it is compiled by the compiler alone, twice, with the flags `pkg-config --cflags --libs`
# prints for cotune (header-only) and for cotune-compiled, and both run. add_subdirectory's program
# links cotune::compiled, fetch_content's the header-only cotune::cotune.
# Each program tunes a kernel and says which mode it was built in, which is checked.
# Any failing step fails the test with its output.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS CONSUMER CONSUMER_SOURCE_DIR WORK_DIR COTUNE_SOURCE_DIR COTUNE_VERSION GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is missing")
  endif()
endforeach()

# Runs a command; stops the test with its output if it fails.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " shown)
    message(FATAL_ERROR "packaging/${CONSUMER}: ${what} failed (${rc}):\n  ${shown}\n${out}")
  endif()
  message(STATUS "packaging/${CONSUMER}: ${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Through the environment (':'-separated), which every nested configure reads: a ';'-list does not
# survive being passed through a function's arguments.
string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
if(DEFINED ENV{CMAKE_PREFIX_PATH})
  string(REPLACE ":" ";" env_prefix_path "$ENV{CMAKE_PREFIX_PATH}")
  list(APPEND prefix_path ${env_prefix_path})
endif()
list(REMOVE_ITEM prefix_path "")
list(JOIN prefix_path ":" joined)
set(ENV{CMAKE_PREFIX_PATH} "${joined}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# No build type: the consumer compiles without optimisation or debug information, the quickest way
# to compile one translation unit that includes all of cotune (about 10 s with g++ 12, against
# 35 s at RelWithDebInfo).
set(common_args -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=" --no-warn-unused-cli)
if(MAKE_PROGRAM)
  list(APPEND common_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

# Runs a consumer program, which must report the given mode. Each program has a cache of its own, so
# that each tunes (none reads another's result).
function(run_program program mode)
  get_filename_component(name "${program}" NAME)
  run("run ${program}" "${program}" "${WORK_DIR}/cache-${name}")
  message(STATUS "${last_output}")
  if(NOT last_output MATCHES "\\(${mode}\\)")
    message(FATAL_ERROR "packaging/${CONSUMER}: ${program} was not built ${mode}:\n${last_output}")
  endif()
  set(last_output "${last_output}" PARENT_SCOPE)
endfunction()

if(CONSUMER STREQUAL "find_package")
  # A fresh configure of the library alone (as a user or a package manager does), the build and an
  # install into a private prefix: what a plain build does, cotune::compiled included (the tool is
  # left out).
  run("configure cotune for installing" ${CMAKE_COMMAND} -S "${COTUNE_SOURCE_DIR}" -B "${WORK_DIR}/cotune-build"
      ${common_args} -DCOTUNE_BUILD_TESTS=OFF -DCOTUNE_BUILD_EXAMPLES=OFF
      -DCOTUNE_BUILD_BENCHMARKS=OFF -DCOTUNE_BUILD_TOOLS=OFF -DCOTUNE_VERIFY_HEADERS=OFF)
  run("build cotune" ${CMAKE_COMMAND} --build "${WORK_DIR}/cotune-build")
  run("install cotune" ${CMAKE_COMMAND} --install "${WORK_DIR}/cotune-build" --prefix "${WORK_DIR}/prefix")
  list(PREPEND prefix_path "${WORK_DIR}/prefix")
  list(JOIN prefix_path ":" joined)
  set(ENV{CMAKE_PREFIX_PATH} "${joined}")
endif()

if(CONSUMER STREQUAL "pkg_config")
  if(NOT PKG_CONFIG)
    message(FATAL_ERROR "packaging/pkg_config: pkg-config was not found (Debian: pkg-config; scripts/install-deps installs it)")
  endif()
  if(NOT INSTALLED_PREFIX OR NOT EXISTS "${INSTALLED_PREFIX}/share/pkgconfig/cotune.pc")
    message(FATAL_ERROR "packaging/pkg_config: no cotune installed in '${INSTALLED_PREFIX}' (packaging/find_package installs it)")
  endif()
  set(pc_dir "${INSTALLED_PREFIX}/share/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  # The modules installed: cotune, cotune-compiled, and cotune-redis / cotune-cuda when cotune was built
  # with them.
  if(NOT EXISTS "${pc_dir}/cotune-compiled.pc")
    message(FATAL_ERROR "packaging/pkg_config: cotune-compiled.pc was not installed beside cotune.pc in ${pc_dir}")
  endif()
  set(modules cotune cotune-compiled)
  set(extra_modules "")
  foreach(module IN ITEMS redis cuda)
    if(EXISTS "${pc_dir}/cotune-${module}.pc")
      list(APPEND modules cotune-${module})
      list(APPEND extra_modules cotune-${module})
    endif()
  endforeach()
  run("validate the .pc files" "${PKG_CONFIG}" --validate ${modules})
  # The installed file, not one from the system or another install.
  run("find cotune.pc" "${PKG_CONFIG}" --variable=pcfiledir cotune)
  string(STRIP "${last_output}" found_dir)
  if(NOT found_dir STREQUAL pc_dir)
    message(FATAL_ERROR "packaging/pkg_config: pkg-config found cotune.pc in '${found_dir}', not in '${pc_dir}'")
  endif()
  run("pkg-config --modversion cotune" "${PKG_CONFIG}" --modversion cotune)
  string(STRIP "${last_output}" found_version)
  if(NOT found_version STREQUAL COTUNE_VERSION)
    message(FATAL_ERROR "packaging/pkg_config: cotune.pc says version '${found_version}', expected '${COTUNE_VERSION}'")
  endif()
  # As a user would write it: the compiler, the standard, the source, pkg-config's flags. The
  # version the consumer checks then comes from core/version.hpp (the .pc defines none). Header-only
  # with cotune (and the modules), compiled once with cotune-compiled.
  foreach(core IN ITEMS cotune cotune-compiled)
    run("pkg-config --cflags --libs ${core} ${extra_modules}" "${PKG_CONFIG}" --cflags --libs ${core} ${extra_modules})
    string(STRIP "${last_output}" flags)
    message(STATUS "packaging/pkg_config: ${flags}")
    separate_arguments(flags UNIX_COMMAND "${flags}")
    run("compile the consumer with ${core}" "${CXX_COMPILER}" -std=c++20
        "-DCONSUMER_EXPECTED_VERSION=\"${COTUNE_VERSION}\"" "${CMAKE_CURRENT_LIST_DIR}/consumer/consumer.cpp"
        -o "${WORK_DIR}/consumer-${core}" ${flags})
  endforeach()
  run_program("${WORK_DIR}/consumer-cotune" "header-only")
  run_program("${WORK_DIR}/consumer-cotune-compiled" "separate compilation")
  return()
endif()

set(consumer_args "")
if(CONSUMER STREQUAL "find_package" AND CUDA_COMPILER)
  list(APPEND consumer_args "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}")
endif()
run("configure the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" ${common_args} ${consumer_args}
    "-DCOTUNE_SOURCE_DIR=${COTUNE_SOURCE_DIR}"
    "-DCOTUNE_EXPECTED_VERSION=${COTUNE_VERSION}" "-DCOTUNE_EXPECTED_PREFIX=${WORK_DIR}/prefix")
run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
if(CONSUMER STREQUAL "fetch_content")
  run_program("${WORK_DIR}/build/consumer" "header-only")
else()
  run_program("${WORK_DIR}/build/consumer" "separate compilation")
endif()
if(CONSUMER STREQUAL "find_package" AND CUDA_COMPILER AND NOT last_output MATCHES "2 compiled CUDA candidates")
  message(FATAL_ERROR "packaging/${CONSUMER}: nvcc was given, but the consumer has no compiled CUDA kernels:\n${last_output}")
endif()
