# Finds cotune's dependencies once and gives each an imported target.
# Debian 12: Boost 1.81 from libboost1.81-dev (the unversioned 1.74 package conflicts with it);
# Crypto++ ships only pkg-config and hiredis 0.14 no imported target, so both are wrapped here.
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

find_package(Threads REQUIRED)
find_package(Boost 1.81 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(simdjson CONFIG REQUIRED)

if(NOT TARGET cotune_deps::cryptopp)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(COTUNE_CRYPTOPP REQUIRED IMPORTED_TARGET GLOBAL libcrypto++)
  add_library(cotune_deps::cryptopp ALIAS PkgConfig::COTUNE_CRYPTOPP)
endif()

if(NOT TARGET cotune_deps::hiredis)
  find_path(COTUNE_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
  find_library(COTUNE_HIREDIS_LIBRARY NAMES hiredis)
  if(COTUNE_HIREDIS_INCLUDE_DIR AND COTUNE_HIREDIS_LIBRARY)
    add_library(cotune_deps::hiredis UNKNOWN IMPORTED GLOBAL)
    set_target_properties(cotune_deps::hiredis PROPERTIES
      IMPORTED_LOCATION "${COTUNE_HIREDIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_HIREDIS_INCLUDE_DIR}")
  endif()
endif()

# CUDA: only the headers (cuda.h, nvrtc.h); libcuda and libnvrtc are dlopen'ed at run time, so a
# program built with cotune starts on a machine without a GPU.
if(NOT TARGET cotune_deps::cuda_headers)
  find_path(COTUNE_CUDA_INCLUDE_DIR NAMES cuda.h nvrtc.h
            HINTS ENV CUDA_HOME ENV CUDA_PATH PATHS /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include
            PATH_SUFFIXES include)
  if(COTUNE_CUDA_INCLUDE_DIR AND EXISTS "${COTUNE_CUDA_INCLUDE_DIR}/nvrtc.h")
    add_library(cotune_deps::cuda_headers INTERFACE IMPORTED GLOBAL)
    set_target_properties(cotune_deps::cuda_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${COTUNE_CUDA_INCLUDE_DIR}")
  endif()
endif()
