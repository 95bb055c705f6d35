"""Conan's test package: builds and runs a program against the created cotune package."""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


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
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
