# The two commands of the README's quick start. Each installs what is missing, configures, builds, runs.
# `make demo` needs no Conan; `make test` installs it for the packaging/conan test.
JOBS ?= $(shell nproc)

.PHONY: demo test tsan sanitize deps configure build clean

deps:
	@scripts/install-deps

configure: deps
	cmake --preset dev

build: configure
	cmake --build --preset dev -j $(JOBS)

# The demo's own tree, build/demo (the demo preset: the example it runs and the tool, at -O1; no tests, no
# Conan; the CUDA module only with a GPU).
demo:
	@scripts/install-deps --no-conan
	JOBS=$(JOBS) scripts/demo

# Every test that can run here (the dev tree builds the tune, cache, detail, redis and knobs suites
# under ASan+UBSan), then the tune and cache suites again under TSan.
test: build
	ctest --preset dev -j $(JOBS)
	$(MAKE) tsan

tsan: deps
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

# Whole trees under the sanitizers (not part of `make test`): ASan+UBSan, then TSan.
sanitize: deps tsan
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

clean:
	rm -rf build
