# The two commands of the README's quick start. Each installs what is missing, configures, builds, runs.
JOBS ?= $(shell nproc)
BUILD ?= build/dev

.PHONY: demo test sanitize deps configure build clean

deps:
	@scripts/install-deps

configure: deps
	cmake --preset dev

build: configure
	cmake --build --preset dev -j $(JOBS)

demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target cotune_examples
	scripts/demo $(BUILD)

# Every test that can run here, then the concurrency-heavy suites again under the sanitizers.
test: build
	ctest --preset dev -j $(JOBS)
	$(MAKE) sanitize

# ASan+UBSan over the tune, cache, detail, redis and knobs suites; TSan over tune and cache.
sanitize: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

clean:
	rm -rf build
