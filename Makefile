# The two commands of the README's quick start. Each installs what is missing, configures, builds, runs.
JOBS ?= $(shell nproc)
BUILD ?= build/dev

.PHONY: demo test deps build clean

deps:
	@scripts/install-deps

build: deps
	cmake --preset dev
	cmake --build --preset dev -j $(JOBS)

demo: build
	$(BUILD)/examples/02_tune_cpu_matmul

test: build
	ctest --preset dev -j $(JOBS)

clean:
	rm -rf build
