# packaging/conan: `conan create` of conan/conanfile.py, with its test_package, offline, against
# Debian 12's packages (conan/profiles/debian12 maps the recipe's ConanCenter dependencies to them
# with [platform_requires]); once with the default options (libcotune.a built: test_package tunes a
# kernel through cotune::compiled) and, when hiredis is here, once with with_redis=True and
# compiled=False (headers only: test_package tunes through cotune::cotune; Debian's hiredis 0.14.1 must
# satisfy the recipe's range). Run as
# `cmake -P run_conan.cmake` with
#   COTUNE_SOURCE_DIR  cotune's source tree
#   WORK_DIR           a scratch directory, emptied first; Conan's home (CONAN_HOME) lives in it, so
#                      the test never reads or writes ~/.conan2
#   TOOLS_DIR          where scripts/install-deps installs Conan (TOOLS_DIR/conan/bin/conan)
#   CONAN              a conan 2 program to use instead (optional; also $COTUNE_CONAN)
#   WITH_REDIS         ON when the outer build has hiredis
#   COTUNE_VERSION     the version the package must have
# Conan missing fails the test, unless scripts/install-deps recorded that it could not install it
# (no PyPI): then the test is skipped with that reason.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS COTUNE_SOURCE_DIR WORK_DIR TOOLS_DIR COTUNE_VERSION)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_conan.cmake: -D${var}=... is missing")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " shown)
    message(FATAL_ERROR "packaging/conan: ${what} failed (${rc}):\n  ${shown}\n${out}")
  endif()
  message(STATUS "packaging/conan: ${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Conan 2: -DCONAN, $COTUNE_CONAN, the one scripts/install-deps installed, then PATH.
if(NOT CONAN AND DEFINED ENV{COTUNE_CONAN})
  set(CONAN "$ENV{COTUNE_CONAN}")
endif()
set(candidates ${CONAN})
if(NOT CONAN)
  find_program(venv_conan conan PATHS "${TOOLS_DIR}/conan/bin" NO_DEFAULT_PATH NO_CACHE)
  find_program(path_conan conan NO_CACHE)
  set(candidates ${venv_conan} ${path_conan})
endif()
set(conan "")
foreach(candidate IN LISTS candidates)
  if(NOT candidate)
    continue()
  endif()
  execute_process(COMMAND "${candidate}" --version RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_QUIET)
  if(rc EQUAL 0 AND version MATCHES "Conan version (2\\.[0-9.]+)")
    set(conan "${candidate}")
    message(STATUS "packaging/conan: Conan ${CMAKE_MATCH_1} (${candidate})")
    break()
  endif()
  message(STATUS "packaging/conan: '${candidate}' is not Conan 2 (${version})")
endforeach()
if(NOT conan)
  if(EXISTS "${TOOLS_DIR}/conan.unavailable")
    file(READ "${TOOLS_DIR}/conan.unavailable" why)
    # The test's SKIP_REGULAR_EXPRESSION.
    message(STATUS "packaging/conan: SKIPPED: scripts/install-deps could not install Conan:\n${why}")
    return()
  endif()
  message(FATAL_ERROR "packaging/conan: Conan 2 was not found: run scripts/install-deps (it installs a pinned "
                      "Conan into ${TOOLS_DIR}/conan), put conan 2 on PATH, or set COTUNE_CONAN")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(ENV{CONAN_HOME} "${WORK_DIR}/conan-home")
unset(ENV{CONAN_DEFAULT_PROFILE})
unset(ENV{CONAN_DEFAULT_BUILD_PROFILE})
# The profile debian12 includes: what Conan detects here (gcc 12, libstdc++11, x86_64, Linux).
run("detect the default profile" "${conan}" profile detect)
# test_package builds in its own folder: a copy, so that nothing is written into the source tree.
file(COPY "${COTUNE_SOURCE_DIR}/conan/test_package" DESTINATION "${WORK_DIR}")

set(variants "default options")
if(WITH_REDIS)
  list(APPEND variants "with_redis=True compiled=False")
endif()
foreach(variant IN LISTS variants)
  set(options "")
  set(mode "compiled")
  if(variant STREQUAL "with_redis=True compiled=False")
    set(options -o "cotune/*:with_redis=True" -o "cotune/*:compiled=False")
    set(mode "header-only")
  endif()
  # -nr: no remote, so that the test never reaches ConanCenter, and fails if the recipe needs it.
  run("conan create (${variant})" "${conan}" create "${COTUNE_SOURCE_DIR}/conan"
      -pr "${COTUNE_SOURCE_DIR}/conan/profiles/debian12" -nr -tf "${WORK_DIR}/test_package" ${options})
  # test_package's own output: the package's version, the way in it tuned through, and the redis
  # module when asked for.
  if(NOT last_output MATCHES "cotune ${COTUNE_VERSION} \\(${mode}\\): tuned 3 configs")
    message(FATAL_ERROR "packaging/conan: test_package (${variant}) did not print 'cotune ${COTUNE_VERSION} (${mode}): tuned 3 configs':\n${last_output}")
  endif()
  if(options AND NOT last_output MATCHES "redis module: key prefix")
    message(FATAL_ERROR "packaging/conan: test_package (${variant}) did not use the redis module:\n${last_output}")
  endif()
  string(REGEX MATCHALL "(cotune ${COTUNE_VERSION}|redis module)[^\n]*" printed "${last_output}")
  list(JOIN printed "; " printed)
  message(STATUS "packaging/conan: test_package (${variant}): ${printed}")
endforeach()
