# The two commands of the README's quick start. Each installs what is missing, configures, builds, runs.
JOBS ?= $(shell nproc)
BUILD ?= build/dev

.PHONY: demo test deps configure build clean

deps:
	@scripts/install-deps

configure: deps
	cmake --preset dev

build: configure
	cmake --build --preset dev -j $(JOBS)

demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target cotune_examples
	scripts/demo $(BUILD)

test: build
	ctest --preset dev -j $(JOBS)

clean:
	rm -rf build
