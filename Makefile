# Thin wrapper: the two set-up commands of the README.
#   make run   install dependencies, build, launch the studio on its bundled defaults
#   make test  install dependencies, build, run every test, then the fuzzers briefly
#   make fuzz  the fuzzers alone (fuzz/README.md): FUZZ_SECONDS per target
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 30
CMAKE_ARGS ?=
ifdef TORCH_DIR
CMAKE_ARGS += -DTORCH_DIR=$(TORCH_DIR)
endif

.PHONY: all deps configure build run test fuzz clean

all: build

deps:
	@bash packaging/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Without a display (ssh, CI) the studio says how to run it; RUN_ARGS are passed through
# (run folders to open, --smoke ...).
run: build
	@./$(BUILD_DIR)/app/hsm-studio $(RUN_ARGS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) bash fuzz/run.sh

# The readers of files a user may be handed, under libFuzzer with ASan and UBSan: a clang
# build tree of its own (build-fuzz/, no LibTorch), each target FUZZ_SECONDS on its seeds.
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) bash fuzz/run.sh

clean:
	rm -rf $(BUILD_DIR) build-fuzz
