# Thin wrapper: the two set-up commands of the README.
#   make run   install dependencies, build, launch the studio on its bundled defaults
#   make test  install dependencies, build, run every test
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
ifdef TORCH_DIR
CMAKE_ARGS += -DTORCH_DIR=$(TORCH_DIR)
endif

.PHONY: all deps configure build run test clean

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

clean:
	rm -rf $(BUILD_DIR)
