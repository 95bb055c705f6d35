"""Conan's test package: builds and runs a program that tunes a kernel through the created package
(cotune::compiled when the package has it, else the header-only cotune::cotune)."""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import rmdir


class CotuneTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        # Tell the program which modules the package was built with, to check their components.
        tc = CMakeToolchain(self)
        cotune = self.dependencies[self.tested_reference_str.split("/")[0]]
        tc.variables["TEST_WITH_CUDA"] = bool(cotune.options.with_cuda)
        tc.variables["TEST_WITH_REDIS"] = bool(cotune.options.with_redis)
        tc.variables["TEST_COMPILED"] = bool(cotune.options.compiled)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        # The host backend compiles the kernel with the C++ compiler found here, into a fresh cache of
        # its own, so that the program tunes (it fails on a result read from a cache).
        cache = os.path.join(self.build_folder, "cotune-cache")
        rmdir(self, cache)
        self.run(f'{os.path.join(self.cpp.build.bindir, "test_package")} "{cache}"', env="conanrun")
