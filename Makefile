# Thin wrapper: the two set-up commands of the README.
#   make run   install dependencies, build, launch the studio on its bundled defaults
#   make test  install dependencies, build, run every test, the package test, then the fuzzers briefly
#   make fuzz  the fuzzers alone (fuzz/README.md): FUZZ_SECONDS per target
#   make package       the .deb: $(BUILD_DIR)/hsm-studio_<version>-1+deb<N>_<arch>.deb (packaging/deb.cmake)
#   make package-test  build it, install it with apt, run the installed programs from /tmp, remove it
#                      (needs root or password-less sudo; packaging/package-test.sh)
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 30
CMAKE_ARGS ?=
ifdef TORCH_DIR
CMAKE_ARGS += -DTORCH_DIR=$(TORCH_DIR)
endif

.PHONY: all deps configure build run test fuzz package package-test clean

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

# Where the .deb cannot be installed (no root, no sudo) the package test says so and is left
# out; CI runs as root.
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@if [ "$$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; then \
	  $(MAKE) --no-print-directory package-test; \
	else \
	  echo "make test: package-test left out: installing the .deb needs root or password-less sudo"; \
	fi
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) bash fuzz/run.sh

package: build
	@cmake --build $(BUILD_DIR) --target package

package-test: package
	@bash packaging/package-test.sh $(BUILD_DIR)

# The readers of files a user may be handed, under libFuzzer with ASan and UBSan: a clang
# build tree of its own (build-fuzz/, no LibTorch), each target FUZZ_SECONDS on its seeds.
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) bash fuzz/run.sh

clean:
	rm -rf $(BUILD_DIR) build-fuzz
