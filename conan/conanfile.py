"""Conan 2 recipe for cotune, a header-only C++20 autotuner, with its bodies compiled once beside.

Lives in conan/ beside the sources: `conan create conan/` packages the working tree. Options:
  compiled    also build and package libcotune.a (component cotune::compiled: the non-template bodies
              and the host tuner compiled once, with COTUNE_SEPARATE_COMPILATION), as fmt's recipe
              builds fmt::fmt beside its header-only mode; True by default. False packages the headers
              alone (one package for every setting and option).
  with_redis  the remote cache over hiredis (component cotune::redis, defines COTUNE_HAS_REDIS)
  with_cuda   the NVRTC + driver API backend (component cotune::cuda, defines COTUNE_HAS_CUDA). It
              needs only the CUDA toolkit's headers (libcuda and libnvrtc are opened at run time);
              ConanCenter has no CUDA toolkit package, so the headers come from the one installed
              here: conf `user.cotune:cuda_root`, else $CUDA_PATH, $CUDA_HOME, /usr/local/cuda.

Dependencies are ConanCenter's packages, under their names there, and each cotune component uses the
component of theirs that carries the CMake target cotune's own package links (Boost::headers,
fmt::fmt, simdjson::simdjson, cryptopp::cryptopp, hiredis::hiredis). A profile may map them to the
system's copies instead ([platform_requires]; conan/profiles/debian12 does it for Debian 12, and the
CTest test packaging/conan creates the package that way, offline). Conan then knows nothing about those
copies (no include directory, library or CMake target), so cotune's components link them by library
name from the compiler's default paths.

Needs compiler.cppstd=20 (or gnu20, or later): `conan profile detect` writes gnu17 for g++ 12.
"""
import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.0"


class CotuneConan(ConanFile):
    name = "cotune"
    description = "Header-only C++20 autotuner for GPU and CPU kernels (Triton's runtime rebuilt for C++)"
    # The project has no LICENSE file yet: set the SPDX identifier here when it picks one.
    license = "LicenseRef-cotune"
    topics = ("autotuning", "gpu", "cuda", "jit", "benchmarking", "header-only")
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "compiled": [True, False],
        "with_redis": [True, False],
        "with_cuda": [True, False],
    }
    default_options = {
        "compiled": True,
        "with_redis": False,
        "with_cuda": False,
        # cotune uses Boost's headers only (Asio is header-only); a consumer that needs compiled
        # Boost libraries sets boost/*:header_only=False, which takes precedence.
        "boost/*:header_only": True,
    }
    no_copy_source = True

    @property
    def _source_root(self):
        return os.path.join(self.recipe_folder, "..")

    def set_version(self):
        # The version lives in one place: project(cotune VERSION x.y.z) in CMakeLists.txt.
        if self.version:
            return
        text = load(self, os.path.join(self._source_root, "CMakeLists.txt"))
        match = re.search(r"project\(\s*cotune\s+VERSION\s+([0-9][0-9.]*)", text)
        if not match:
            raise ConanInvalidConfiguration("cannot find project(cotune VERSION ...) in CMakeLists.txt")
        self.version = match.group(1)

    def export_sources(self):
        # The headers, and what builds libcotune.a: the CMake project, its modules and its sources.
        for pattern in ("include/*", "src/*", "cmake/*", "CMakeLists.txt", "LICENSE*"):
            copy(self, pattern, src=self._source_root, dst=self.export_sources_folder)

    def configure(self):
        if not self.options.compiled:
            self.package_type = "header-library"

    def package_id(self):
        # Header-only: the same headers whatever the settings and options, one package id (options only
        # change which components package_info declares and which dependencies are pulled in).
        if not self.info.options.compiled:
            self.info.clear()

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # transitive_headers: cotune's public headers include theirs. Each lower bound is the version
        # cotune is built and tested with (Debian 12's); the upper bounds are the next major versions,
        # which are not tested.
        self.requires("boost/[>=1.81 <2]", transitive_headers=True)
        self.requires("fmt/[>=9.1 <12]", transitive_headers=True)
        self.requires("simdjson/[>=3.0 <4]", transitive_headers=True)
        self.requires("cryptopp/[>=8.7 <9]", transitive_headers=True)
        if self.options.with_redis:
            # The synchronous API cotune uses (redisConnectWithTimeout, redisCommandArgv,
            # redisAppendCommandArgv, redisGetReply, redisSetTimeout) is the same in 0.14 and 1.x;
            # the tests run against Debian 12's 0.14.1.
            self.requires("hiredis/[>=0.14 <2]", transitive_headers=True)

    def validate(self):
        try:
            check_min_cppstd(self, 20)
        except ConanInvalidConfiguration as e:
            raise ConanInvalidConfiguration(f"{str(e).rstrip('.')}: set compiler.cppstd=20 in the profile or "
                                            f"pass -s compiler.cppstd=20 (conan profile detect writes gnu17 "
                                            f"for g++ 12)") from e
        if self.settings.os not in ("Linux", "FreeBSD", "Macos"):
            raise ConanInvalidConfiguration(f"{self.ref} needs a POSIX system (fork/exec, dlopen); "
                                            f"{self.settings.os} is not supported")
        if self.options.with_cuda and self.settings.os != "Linux":
            raise ConanInvalidConfiguration(f"{self.ref}: with_cuda is supported on Linux only")

    def generate(self):
        if not self.options.compiled:
            return
        tc = CMakeToolchain(self)
        # The library alone: none of the project's tests, examples, benchmarks, tool or header checks.
        for part in ("TESTS", "EXAMPLES", "BENCHMARKS", "TOOLS"):
            tc.cache_variables[f"COTUNE_BUILD_{part}"] = False
        tc.cache_variables["COTUNE_VERIFY_HEADERS"] = False
        tc.cache_variables["COTUNE_BUILD_SEPARATE"] = True
        # The modules this package declares, and no other (the recipe has no HIP or DLPack option).
        tc.cache_variables["COTUNE_WITH_REDIS"] = "ON" if self.options.with_redis else "OFF"
        tc.cache_variables["COTUNE_WITH_CUDA"] = "ON" if self.options.with_cuda else "OFF"
        tc.cache_variables["COTUNE_WITH_HIP"] = "OFF"
        tc.cache_variables["COTUNE_WITH_DLPACK"] = "OFF"
        if self.options.with_cuda:
            tc.cache_variables["COTUNE_CUDA_INCLUDE_DIR"] = self._cuda_include_dir()
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        if not self.options.compiled:
            return
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE*", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))
        if self.options.compiled:
            # libcotune.a (with cotune's headers); package_info declares the targets, so the project's own
            # CMake package and pkg-config files are left out.
            CMake(self).install()
            rmdir(self, os.path.join(self.package_folder, "share"))
        # The headers and the bodies of their non-template functions (`.ipp`, which the headers include
        # unless COTUNE_SEPARATE_COMPILATION): a header-only package needs both.
        for pattern in ("*.hpp", "*.ipp"):
            copy(self, pattern, src=os.path.join(self.source_folder, "include"),
                 dst=os.path.join(self.package_folder, "include"))

    def _cuda_include_dir(self):
        root = (self.conf.get("user.cotune:cuda_root") or os.environ.get("CUDA_PATH")
                or os.environ.get("CUDA_HOME") or "/usr/local/cuda")
        return os.path.join(root, "include")

    # Each dependency: the Conan component cotune uses (ConanCenter's names; "pkg::pkg" is the whole
    # package) and the library to link when a profile maps it to the platform. Boost::headers is
    # boost's "headers" component; fmt, simdjson and cryptopp are one library each; hiredis is the
    # whole package, because ConanCenter's 1.x recipes call the library component "hiredislib" and
    # its 0.14 recipe has no components.
    _dependencies = {
        "boost": ("boost::headers", []),
        "fmt": ("fmt::fmt", ["fmt"]),
        "simdjson": ("simdjson::simdjson", ["simdjson"]),
        "cryptopp": ("cryptopp::cryptopp", ["cryptopp"]),
        "hiredis": ("hiredis::hiredis", ["hiredis"]),
    }

    def _use(self, component, *names):
        for name in names:
            conan_component, platform_libs = self._dependencies[name]
            # A [platform_requires] dependency is left out of self.dependencies: Conan has no
            # package for it, and CMakeDeps refuses a component that requires it.
            if name in self.dependencies:
                component.requires.append(conan_component)
            else:
                component.system_libs += platform_libs

    def package_info(self):
        # find_package(cotune) and the same target names as cotune's own CMake package config.
        self.cpp_info.set_property("cmake_file_name", "cotune")
        # The root target aggregates the components; cotune::cotune is the core component's name.
        self.cpp_info.set_property("cmake_target_name", "cotune::cotune_all")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "cotune::cotune")
        core.set_property("pkg_config_name", "cotune")  # the names of cotune's installed .pc files
        core.bindirs = []
        core.libdirs = []
        core.defines = [f'COTUNE_VERSION_STRING="{self.version}"', "BOOST_ASIO_NO_DEPRECATED"]
        self._use(core, "boost", "fmt", "simdjson", "cryptopp")
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs += ["pthread", "dl"]

        if self.options.compiled:
            compiled = self.cpp_info.components["compiled"]
            compiled.set_property("cmake_target_name", "cotune::compiled")
            compiled.set_property("pkg_config_name", "cotune-compiled")
            compiled.bindirs = []
            compiled.libs = ["cotune"]
            compiled.requires = ["core"]
            compiled.defines = ["COTUNE_SEPARATE_COMPILATION"]

        if self.options.with_cuda:
            cuda = self.cpp_info.components["cuda"]
            cuda.set_property("cmake_target_name", "cotune::cuda")
            cuda.set_property("pkg_config_name", "cotune-cuda")
            cuda.bindirs = []
            cuda.libdirs = []
            cuda.requires = ["core"]
            cuda.defines = ["COTUNE_HAS_CUDA=1"]
            # cuda.h and nvrtc.h only: an absolute include directory outside the package.
            cuda.includedirs = ["include", self._cuda_include_dir()]

        if self.options.with_redis:
            redis = self.cpp_info.components["redis"]
            redis.set_property("cmake_target_name", "cotune::redis")
            redis.set_property("pkg_config_name", "cotune-redis")
            redis.bindirs = []
            redis.libdirs = []
            redis.requires = ["core"]
            redis.defines = ["COTUNE_HAS_REDIS=1"]
            self._use(redis, "hiredis")
