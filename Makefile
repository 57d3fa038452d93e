# Task runner. `make demo` and `make test` are the README's two Quickstart commands: each does all set-up
# itself on a fresh machine:
#   .venv         the package, its test tools, a CPU torch and the upstream `kernels` loader
#   .venv-cu130   a CUDA 13.0 torch: the build interpreter of the CUDA tests (--python)
# Both torch pins come from the matrix data (kernel_builder/formats/build-matrix.json); tests/matrix_data.py
# says which entries (standard library only: it runs before any environment exists). After a matrix bump that
# moves them, `make clean` and the next `make test` recreate the environments (tests/test_matrix_data.py says so).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CUDA_VENV := .venv-cu130
CUDA_STAMP := $(CUDA_VENV)/.installed
TEST_TORCH_CPU = $(shell $(PYTHON) tests/matrix_data.py cpu-test-pin)
TEST_TORCH_CUDA = $(shell $(PYTHON) tests/matrix_data.py cuda-test-pin)

.PHONY: demo test test-fast lint typecheck clean nix-tools redis-tools cross-tools

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' 'torch==$(TEST_TORCH_CPU)'
	touch $(STAMP)

$(CUDA_STAMP):
	$(PYTHON) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/pip install --quiet 'torch==$(TEST_TORCH_CUDA)'
	touch $(CUDA_STAMP)

demo: $(STAMP)
	$(BIN)/kernel-builder check-config examples/relu
	$(BIN)/kernel-builder build examples/relu
	$(BIN)/python examples/demo.py examples/relu

# tests/test_nix.py evaluates lib/ and flake.nix with nix-instantiate (no nixpkgs, no daemon). Where it is
# missing and we are root with apt-get (CI: a clean Debian clone), install Debian's nix-bin; otherwise say why
# those tests will skip. A failed install fails `make test`.
nix-tools:
	@command -v nix-instantiate >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nix-bin; \
	  else \
	    echo "note: nix-instantiate not found and nix-bin needs root and apt-get: tests/test_nix.py will skip"; \
	  fi; }

# tests/test_build_compile_compiler_cache.py shares an sccache cache through a real Redis server on loopback;
# installed the same way (Debian's redis-server), or those tests skip and say why.
redis-tools:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server; \
	  else \
	    echo "note: redis-server not found and needs root and apt-get: the shared-cache tests will skip"; \
	  fi; }

# tests/test_build_cross.py cross-compiles for aarch64-linux and loads the result under emulation (docs/cross.md):
# Debian's aarch64 cross compiler and qemu-user, and arm64 as a foreign architecture so that the emulated
# Python's packages can be fetched (apt-get download); installed the same way, or those tests skip and say why.
cross-tools:
	@{ command -v aarch64-linux-gnu-g++ && command -v qemu-aarch64-static \
	   && dpkg --print-foreign-architectures | grep -qx arm64; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    dpkg --add-architecture arm64 && apt-get update -qq \
	    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu qemu-user-static; \
	  else \
	    echo "note: the aarch64 cross compiler and qemu-user-static need root and apt-get: the cross-build tests will skip"; \
	  fi; }

# The suite runs in TEST_WORKERS pytest-xdist workers (default: the cores, at most 4), each taking whole test
# files (--dist loadfile), so a file's shared builds are made once, in one worker. Most of a test's time is one
# process at a time (Python and Torch start-up, CMake configure, pip): two workers keep both cores of a CI
# host busy. `make test TEST_WORKERS=0` runs it in one process (docs/performance.md has the timings).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)

test: $(STAMP) $(CUDA_STAMP) nix-tools redis-tools cross-tools
	KB_TEST_CUDA_PYTHON=$(CURDIR)/$(CUDA_VENV)/bin/python $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check kernel_builder tests benchmarks examples
	$(BIN)/ruff format --check kernel_builder tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(CUDA_VENV) .pytest_cache .mypy_cache .ruff_cache
