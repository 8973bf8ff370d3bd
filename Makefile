# The two commands of the README: `make demo` and `make test`.
# Both install missing Debian packages, configure and build (Release, Ninja).
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_EXTRA ?=

.PHONY: all deps build demo test bench fuzz-long clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_EXTRA) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@scripts/bench.sh $(BUILD)

# The fuzzers as a benchmark: 10 minutes per parser (needs build-asan from .ci/run).
fuzz-long:
	@scripts/fuzz.sh build-asan 600

clean:
	rm -rf $(BUILD) out
