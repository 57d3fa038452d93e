# Task runner. `make demo` and `make test` are the README's two Quickstart commands: each does all set-up
# itself on a fresh machine:
#   .venv           the package, its test tools, a CPU torch and the upstream `kernels` loader
#   .venv-kb-cache  the tests' kernel-builder cache, kept between runs (git ignores it). It holds the isolated
#                   CUDA 13.0 torch environment of the CUDA test variant, made by kernel-builder itself
#                   (tests/cuda_test_env.py): the build interpreter of the CUDA tests (--python) and the
#                   environment the variant-matrix tests' builds find, so it is pip-installed once per clone. It
#                   also holds the older releases of `kernels` (0.17, 0.18) that the release-line tests run with
#                   beside the pinned one (tests/upstream_kernels.py: one wheel each, no second torch).
# Both torch pins come from the matrix data (kernel_builder/formats/build-matrix.json); tests/matrix_data.py
# says which entries (standard library only: it runs before any environment exists). After a matrix bump that
# moves them, `make clean` and the next `make test` recreate the environments (tests/test_matrix_data.py says so).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_CACHE := .venv-kb-cache
# Holds the path of the CUDA tests' interpreter.
CUDA_STAMP := $(TEST_CACHE)/cuda-test-python
TEST_TORCH_CPU = $(shell $(PYTHON) tests/matrix_data.py cpu-test-pin)

.PHONY: demo test test-fast lint typecheck clean nix-tools redis-tools cross-tools

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' 'torch==$(TEST_TORCH_CPU)'
	touch $(STAMP)

# .venv-cu130 links to that environment, for running the CUDA tests or benchmarks by hand (an older checkout's
# .venv-cu130 directory is left as it is).
$(CUDA_STAMP): $(STAMP)
	mkdir -p $(TEST_CACHE)
	KERNEL_BUILDER_CACHE=$(CURDIR)/$(TEST_CACHE) $(BIN)/python tests/cuda_test_env.py > $@.tmp
	[ -e .venv-cu130 ] || ln -s "$(TEST_CACHE)/envs/$$(basename "$$(dirname "$$(dirname "$$(cat $@.tmp)")")")" .venv-cu130
	mv $@.tmp $@

# The older `kernels` releases, installed once per clone (the tests install them themselves when missing).
KERNELS_STAMP := $(TEST_CACHE)/upstream-kernels/.installed
$(KERNELS_STAMP): $(STAMP) tests/upstream_kernels.py
	mkdir -p $(TEST_CACHE)
	KB_TEST_KERNEL_BUILDER_CACHE=$(CURDIR)/$(TEST_CACHE) $(BIN)/python tests/upstream_kernels.py
	touch $@

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

# tests/test_pipeline_compile_compiler_cache.py shares an sccache cache through a real Redis server on loopback;
# installed the same way (Debian's redis-server), or those tests skip and say why.
redis-tools:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server; \
	  else \
	    echo "note: redis-server not found and needs root and apt-get: the shared-cache tests will skip"; \
	  fi; }

# tests/test_pipeline_cross.py cross-compiles for aarch64-linux and loads the result under emulation (docs/cross.md):
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
# files (--dist loadfile), so a file's shared builds are made once, in one worker (the examples' builds once per
# run: tests/cpu_projects.py). Most of a test's time is one process at a time (Python and Torch start-up, CMake
# configure): two workers keep both cores of a CI host busy. `make test TEST_WORKERS=0` runs it in one process;
# PYTEST_ARGS adds pytest options (`make test PYTEST_ARGS=--junitxml=run.xml`, then benchmarks/test_times.py
# gives the seconds per file; docs/performance.md has the timings).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)
PYTEST_ARGS ?=
TEST_ENV = KB_TEST_CUDA_PYTHON=$$(cat $(CUDA_STAMP)) KB_TEST_KERNEL_BUILDER_CACHE=$(CURDIR)/$(TEST_CACHE)

test: $(STAMP) $(CUDA_STAMP) $(KERNELS_STAMP) nix-tools redis-tools cross-tools
	$(TEST_ENV) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The edit loop: every test that takes well under a second or two (`slow` marks the others: compiling, starting
# interpreters that import Torch, waiting out deadlines). Its time goes more to waiting (the Hub double's stalls,
# retries' back-off) than to computing, so it runs twice as many workers as cores (at most 8).
FAST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); n=$$((2 * n)); [ "$$n" -gt 8 ] && n=8; echo $$n)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(FAST_WORKERS) --dist loadfile -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check kernel_builder tests benchmarks examples
	$(BIN)/ruff format --check kernel_builder tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(TEST_CACHE) .venv-cu130 .pytest_cache .mypy_cache .ruff_cache
