# vcpkg port for cotune (header-only). As an overlay port it packages the source tree it lives in:
#   vcpkg install "cotune[redis,cuda]" --overlay-ports=<cotune>/conan/vcpkg/ports
# A registry port would fetch a release instead of the lines that set SOURCE_PATH:
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/cotune REF "v${VERSION}" SHA512 <sha512> HEAD_REF main)
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT EXISTS "${SOURCE_PATH}/include/cotune/cotune.hpp")
  message(FATAL_ERROR "cotune's sources were not found at '${SOURCE_PATH}': use this port as an overlay from "
                      "inside the cotune repository (conan/vcpkg/ports), or switch it to vcpkg_from_github")
endif()

# Header-only: one configuration is enough.
set(VCPKG_BUILD_TYPE release)

# Features decide the optional modules (ON/OFF), never what happens to be installed on the machine.
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    cuda  COTUNE_WITH_CUDA
    redis COTUNE_WITH_REDIS
)
set(cuda_options "")
if("cuda" IN_LIST FEATURES)
  include("${CURRENT_INSTALLED_DIR}/share/cuda/vcpkg_find_cuda.cmake")
  vcpkg_find_cuda(OUT_CUDA_TOOLKIT_ROOT cuda_toolkit_root)
  set(cuda_options "-DCOTUNE_CUDA_INCLUDE_DIR=${cuda_toolkit_root}/include")
endif()

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${FEATURE_OPTIONS}
    ${cuda_options}
    -DCOTUNE_BUILD_TESTS=OFF
    -DCOTUNE_BUILD_EXAMPLES=OFF
    -DCOTUNE_BUILD_BENCHMARKS=OFF
    -DCOTUNE_BUILD_TOOLS=OFF
    -DCOTUNE_VERIFY_HEADERS=OFF
    # A header-only port: the separately compiled library (COTUNE_SEPARATE_COMPILATION) is left to
    # projects that build cotune themselves.
    -DCOTUNE_BUILD_SEPARATE=OFF
    # No feature for DLPack tensors (cotune::dlpack) yet: left out, whatever is installed.
    -DCOTUNE_WITH_DLPACK=OFF
  MAYBE_UNUSED_VARIABLES
    COTUNE_BUILD_TOOLS
    COTUNE_CUDA_INCLUDE_DIR
)
vcpkg_cmake_install()
# cotune installs its package config to share/cmake/cotune; vcpkg wants share/cotune.
vcpkg_cmake_config_fixup(PACKAGE_NAME cotune CONFIG_PATH share/cmake/cotune)

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug")
# cotune.pc names its dependencies' pkg-config modules as found on the build machine (Debian's
# libcrypto++, for one); that has not been checked against vcpkg's ports, so the port ships the CMake
# package only.
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/share/pkgconfig")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
# The project has no LICENSE file yet; vcpkg requires a copyright file, so point at what exists.
if(EXISTS "${SOURCE_PATH}/LICENSE")
  vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
else()
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright"
       "cotune: no license has been chosen yet; see the project's repository.\n")
endif()
