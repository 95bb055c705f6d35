# Finds cotune's dependencies and gives each an imported target. Used in two ways:
#  - by cotune's CMakeLists.txt (build mode: top level, add_subdirectory, FetchContent): a missing
#    required dependency stops the configure with what to install;
#  - by the installed cotune-config.cmake, which sets COTUNE_PACKAGE_MODE (package mode): a missing
#    dependency makes find_package(cotune) report "not found" with the reason, as find_dependency does,
#    and only the optional modules cotune was installed with are looked for.
# Debian 12: Boost 1.81 from libboost1.81-dev (the unversioned 1.74 package conflicts with it);
# Crypto++ ships only pkg-config and hiredis 0.14 no imported target, so both are wrapped below.
# Every target is created once (guarded), so including this file again is harmless.
include(CMakeFindDependencyMacro)

# Optional modules in build mode: AUTO builds a module when its dependency is found, ON requires the
# dependency, OFF leaves the module out. Package managers pass ON or OFF (their feature/option), so
# that what gets built does not depend on what happens to be installed on the build machine.
if(NOT COTUNE_PACKAGE_MODE)
  set(COTUNE_WITH_REDIS AUTO CACHE STRING "Build cotune::redis (needs hiredis): AUTO, ON or OFF")
  set(COTUNE_WITH_CUDA AUTO CACHE STRING "Build cotune::cuda (needs the CUDA toolkit headers): AUTO, ON or OFF")
  set(COTUNE_WITH_HIP AUTO CACHE STRING
      "Build cotune::hip (needs no HIP header; ON also requires the HIP headers, to check cotune's declarations): AUTO, ON or OFF")
  set_property(CACHE COTUNE_WITH_REDIS PROPERTY STRINGS AUTO ON OFF)
  set_property(CACHE COTUNE_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
  set_property(CACHE COTUNE_WITH_HIP PROPERTY STRINGS AUTO ON OFF)
  set(COTUNE_WITH_DLPACK AUTO CACHE STRING "Build cotune::dlpack (needs DLPack's header, dlpack/dlpack.h): AUTO, ON or OFF")
  set_property(CACHE COTUNE_WITH_DLPACK PROPERTY STRINGS AUTO ON OFF)
  # Normalised to AUTO, ON or OFF (any CMake truth value is accepted).
  foreach(module IN ITEMS redis cuda hip dlpack)
    string(TOUPPER "${module}" cotune_module)
    string(TOUPPER "${COTUNE_WITH_${cotune_module}}" cotune_want_${module})
    if(NOT cotune_want_${module} STREQUAL "AUTO")
      if(cotune_want_${module})
        set(cotune_want_${module} ON)
      else()
        set(cotune_want_${module} OFF)
      endif()
    endif()
  endforeach()
  unset(cotune_module)
else()
  # What the installed package holds (set by cotune-config.cmake): look only for those modules, and
  # never fail the whole package over one; cotune-config.cmake reports them as components.
  set(cotune_want_redis AUTO)
  set(cotune_want_cuda AUTO)
  set(cotune_want_hip AUTO)
  if(NOT COTUNE_PACKAGE_HAS_REDIS)
    set(cotune_want_redis OFF)
  endif()
  if(NOT COTUNE_PACKAGE_HAS_CUDA)
    set(cotune_want_cuda OFF)
  endif()
endif()

# A required dependency: find_dependency in package mode (it returns from this file with cotune_FOUND
# set to FALSE and the reason in cotune_NOT_FOUND_MESSAGE), a hard requirement in build mode.
macro(cotune_require_dependency)
  if(COTUNE_PACKAGE_MODE)
    find_dependency(${ARGN})
  else()
    find_package(${ARGN} REQUIRED)
  endif()
endmacro()

cotune_require_dependency(Threads)
cotune_require_dependency(Boost 1.81 CONFIG)
cotune_require_dependency(fmt CONFIG)
cotune_require_dependency(simdjson CONFIG)

# Crypto++ and hiredis each become one cotune_deps:: target (an imported target of its own, not an
# alias, so that the installed package names it and each consumer binds it to what it finds).
# Package managers' CMake configs come first (vcpkg and Conan both give cryptopp::cryptopp and
# hiredis::hiredis), then what Debian ships: pkg-config for Crypto++, a bare header and library for
# hiredis 0.14.
if(NOT TARGET cotune_deps::cryptopp)
  find_package(cryptopp CONFIG QUIET)
  if(TARGET cryptopp::cryptopp)
    add_library(cotune_deps::cryptopp INTERFACE IMPORTED GLOBAL)
    target_link_libraries(cotune_deps::cryptopp INTERFACE cryptopp::cryptopp)
  else()
    cotune_require_dependency(PkgConfig)
    pkg_check_modules(COTUNE_CRYPTOPP QUIET IMPORTED_TARGET GLOBAL libcrypto++)
    if(NOT COTUNE_CRYPTOPP_FOUND)
      set(cotune_missing "Crypto++ was not found (neither a cryptopp CMake package nor the pkg-config module "
                         "libcrypto++): install libcrypto++-dev (Debian/Ubuntu) or add its prefix to "
                         "CMAKE_PREFIX_PATH / PKG_CONFIG_PATH")
      if(COTUNE_PACKAGE_MODE)
        string(CONCAT cotune_NOT_FOUND_MESSAGE ${cotune_missing})
        set(cotune_FOUND FALSE)
        return()
      endif()
      message(FATAL_ERROR ${cotune_missing})
    endif()
    add_library(cotune_deps::cryptopp INTERFACE IMPORTED GLOBAL)
    target_link_libraries(cotune_deps::cryptopp INTERFACE PkgConfig::COTUNE_CRYPTOPP)
  endif()
endif()

if(NOT TARGET cotune_deps::hiredis AND NOT cotune_want_redis STREQUAL "OFF")
  find_package(hiredis CONFIG QUIET)
  if(TARGET hiredis::hiredis)
    add_library(cotune_deps::hiredis INTERFACE IMPORTED GLOBAL)
    target_link_libraries(cotune_deps::hiredis INTERFACE hiredis::hiredis)
  else()
    find_path(COTUNE_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
    find_library(COTUNE_HIREDIS_LIBRARY NAMES hiredis)
    if(COTUNE_HIREDIS_INCLUDE_DIR AND COTUNE_HIREDIS_LIBRARY)
      add_library(cotune_deps::hiredis UNKNOWN IMPORTED GLOBAL)
      set_target_properties(cotune_deps::hiredis PROPERTIES
        IMPORTED_LOCATION "${COTUNE_HIREDIS_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_HIREDIS_INCLUDE_DIR}")
    elseif(NOT cotune_want_redis STREQUAL "AUTO")
      message(FATAL_ERROR "COTUNE_WITH_REDIS=${COTUNE_WITH_REDIS} but hiredis was not found: install "
                          "libhiredis-dev, set COTUNE_HIREDIS_INCLUDE_DIR and COTUNE_HIREDIS_LIBRARY, or pass "
                          "-DCOTUNE_WITH_REDIS=OFF")
    endif()
  endif()
endif()

# CUDA: only the headers (cuda.h, nvrtc.h); libcuda and libnvrtc are dlopen'ed at run time, so a
# program built with cotune starts on a machine without a GPU.
if(NOT TARGET cotune_deps::cuda_headers AND NOT cotune_want_cuda STREQUAL "OFF")
  find_path(COTUNE_CUDA_INCLUDE_DIR NAMES cuda.h nvrtc.h
            HINTS ENV CUDA_HOME ENV CUDA_PATH PATHS /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include
            PATH_SUFFIXES include)
  if(COTUNE_CUDA_INCLUDE_DIR AND EXISTS "${COTUNE_CUDA_INCLUDE_DIR}/nvrtc.h")
    add_library(cotune_deps::cuda_headers INTERFACE IMPORTED GLOBAL)
    set_target_properties(cotune_deps::cuda_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_CUDA_INCLUDE_DIR}")
  elseif(NOT cotune_want_cuda STREQUAL "AUTO")
    message(FATAL_ERROR "COTUNE_WITH_CUDA=${COTUNE_WITH_CUDA} but the CUDA headers (cuda.h and nvrtc.h) were "
                        "not found: set CUDA_HOME or COTUNE_CUDA_INCLUDE_DIR, or pass -DCOTUNE_WITH_CUDA=OFF")
  endif()
endif()

# HIP: cotune::hip declares the HIP functions it loads itself, so it builds without any HIP header.
# The HIP headers (Debian: libamdhip64-dev) are looked for only so that the tests can check those
# declarations against them; COTUNE_WITH_HIP=ON requires them.
if(NOT COTUNE_PACKAGE_MODE AND NOT TARGET cotune_deps::hip_headers AND NOT cotune_want_hip STREQUAL "OFF")
  find_path(COTUNE_HIP_INCLUDE_DIR NAMES hip/hip_runtime_api.h hip/hiprtc.h
            HINTS ENV ROCM_PATH ENV HIP_PATH PATHS /opt/rocm/include /usr/include PATH_SUFFIXES include)
  if(COTUNE_HIP_INCLUDE_DIR AND EXISTS "${COTUNE_HIP_INCLUDE_DIR}/hip/hiprtc.h")
    add_library(cotune_deps::hip_headers INTERFACE IMPORTED GLOBAL)
    set_target_properties(cotune_deps::hip_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_HIP_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__=1")
  elseif(cotune_want_hip STREQUAL "ON")
    message(FATAL_ERROR "COTUNE_WITH_HIP=ON but the HIP headers (hip/hip_runtime_api.h, hip/hiprtc.h) were not "
                        "found, so cotune's HIP declarations cannot be checked: install libamdhip64-dev (Debian) or "
                        "ROCm, set COTUNE_HIP_INCLUDE_DIR, or pass -DCOTUNE_WITH_HIP=AUTO")
  endif()
endif()
if(COTUNE_PACKAGE_MODE AND NOT COTUNE_PACKAGE_HAS_HIP)
  set(cotune_want_hip OFF)
endif()
set(COTUNE_BUILD_HIP_MODULE OFF)
if(NOT cotune_want_hip STREQUAL "OFF")
  set(COTUNE_BUILD_HIP_MODULE ON)
endif()

# DLPack: one header (Debian: libdlpack-dev), the tensor exchange format of PyTorch, CuPy and JAX.
# cotune::dlpack (tensors as kernel arguments) is built when it is found; nothing else needs it.
# Package mode looks for it only when cotune was installed with the module.
if(COTUNE_PACKAGE_MODE)
  set(cotune_want_dlpack OFF)
  if(COTUNE_PACKAGE_HAS_DLPACK)
    set(cotune_want_dlpack AUTO)
  endif()
endif()
if(NOT TARGET cotune_deps::dlpack AND NOT cotune_want_dlpack STREQUAL "OFF")
  find_path(COTUNE_DLPACK_INCLUDE_DIR NAMES dlpack/dlpack.h PATH_SUFFIXES include)
  if(COTUNE_DLPACK_INCLUDE_DIR)
    add_library(cotune_deps::dlpack INTERFACE IMPORTED GLOBAL)
    set_target_properties(cotune_deps::dlpack PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_DLPACK_INCLUDE_DIR}")
  elseif(cotune_want_dlpack STREQUAL "ON")
    message(FATAL_ERROR "COTUNE_WITH_DLPACK=ON but DLPack's header (dlpack/dlpack.h) was not found: install "
                        "libdlpack-dev (Debian), set COTUNE_DLPACK_INCLUDE_DIR, or pass -DCOTUNE_WITH_DLPACK=OFF")
  endif()
endif()

unset(cotune_want_redis)
unset(cotune_want_cuda)
unset(cotune_want_hip)
unset(cotune_want_dlpack)
unset(cotune_missing)
