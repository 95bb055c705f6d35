# Runs one packaging test as a CTest test: `cmake -P run_consumer.cmake` with
#   CONSUMER            find_package | add_subdirectory | fetch_content | pkg_config
#   CONSUMER_SOURCE_DIR the consumer project (tests/packaging/<CONSUMER>; pkg_config has none)
#   WORK_DIR            a scratch directory, emptied first
#   COTUNE_SOURCE_DIR   cotune's source tree
#   COTUNE_VERSION      the version the consumer must get
#   GENERATOR, MAKE_PROGRAM, CXX_COMPILER   the outer build's, so the consumer builds the same way
#   PREFIX_PATH         the outer build's CMAKE_PREFIX_PATH, '|'-separated (where dependencies live)
#   PKG_CONFIG          pkg-config (pkg_config only)
# find_package and pkg_config first configure cotune on its own, build it and install it into
# WORK_DIR/prefix, as the README tells a user to. Then the find_package consumer is configured, built
# (linking the installed cotune_separate: COTUNE_SEPARATE_COMPILATION) and run; the pkg_config one is
# compiled by the compiler alone, with the flags `pkg-config --cflags --libs cotune` prints, and run.
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

if(CONSUMER STREQUAL "find_package" OR CONSUMER STREQUAL "pkg_config")
  # A fresh configure of the library alone (as a user or a package manager does), the build and an
  # install into a private prefix. find_package builds what a plain build does: cotune::cotune_separate
  # (the tool is left out). pkg_config leaves that library out: the .pc files describe the header-only
  # library, and the static library is find_package's to test: its consumer links it.
  set(separate ON)
  if(CONSUMER STREQUAL "pkg_config")
    set(separate OFF)
  endif()
  run("configure cotune for installing" ${CMAKE_COMMAND} -S "${COTUNE_SOURCE_DIR}" -B "${WORK_DIR}/cotune-build"
      ${common_args} -DCOTUNE_BUILD_TESTS=OFF -DCOTUNE_BUILD_EXAMPLES=OFF
      -DCOTUNE_BUILD_BENCHMARKS=OFF -DCOTUNE_BUILD_TOOLS=OFF -DCOTUNE_VERIFY_HEADERS=OFF
      -DCOTUNE_BUILD_SEPARATE=${separate})
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
  set(pc_dir "${WORK_DIR}/prefix/share/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  # The modules installed: cotune, and cotune-redis / cotune-cuda when cotune was built with them.
  set(modules cotune)
  foreach(module IN ITEMS redis cuda)
    if(EXISTS "${pc_dir}/cotune-${module}.pc")
      list(APPEND modules cotune-${module})
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
  run("pkg-config --cflags --libs ${modules}" "${PKG_CONFIG}" --cflags --libs ${modules})
  string(STRIP "${last_output}" flags)
  message(STATUS "packaging/pkg_config: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  # As a user would write it: the compiler, the standard, the source, pkg-config's flags. The
  # version the consumer checks then comes from core/version.hpp (the .pc defines none).
  run("compile the consumer" "${CXX_COMPILER}" -std=c++20 "-DCONSUMER_EXPECTED_VERSION=\"${COTUNE_VERSION}\""
      "${CMAKE_CURRENT_LIST_DIR}/consumer/consumer.cpp" -o "${WORK_DIR}/consumer" ${flags})
  run("run the consumer" "${WORK_DIR}/consumer" "${WORK_DIR}/cache")
  message(STATUS "${last_output}")
  return()
endif()

run("configure the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" ${common_args}
    "-DCOTUNE_SOURCE_DIR=${COTUNE_SOURCE_DIR}"
    "-DCOTUNE_EXPECTED_VERSION=${COTUNE_VERSION}" "-DCOTUNE_EXPECTED_PREFIX=${WORK_DIR}/prefix")
run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("run the consumer" "${WORK_DIR}/build/consumer" "${WORK_DIR}/cache")
message(STATUS "${last_output}")
# find_package's consumer links the installed cotune_separate; the others are header-only.
if(CONSUMER STREQUAL "find_package")
  set(expected_mode "separate compilation")
else()
  set(expected_mode "header-only")
endif()
if(NOT last_output MATCHES "\\(${expected_mode}\\)")
  message(FATAL_ERROR "packaging/${CONSUMER}: the consumer was not built ${expected_mode}:\n${last_output}")
endif()
