"""tests/matrix_data.py: its reading of the matrix file agrees with ``load_matrix()``, and the test
environments the Makefile creates have the Torch it derives from the matrix."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys

import matrix_data
import pytest
from build_runs import cuda_python
from matrix_data import (
    CPU_TEST_PIN,
    CPU_TEST_TORCH,
    CPU_VARIANT,
    CUDA_TEST_PIN,
    CUDA_TEST_TORCH,
    CUDA_VARIANT,
    MATRIX_FILE,
    NEWEST_TORCH,
    OLDEST_TORCH,
    REQUIRED_TORCH_VERSIONS,
    TEST_CUDA,
    TEST_TORCH_CAP,
    TORCH_VERSIONS,
)
from packaging.version import Version

from kernel_builder.formats.matrix import load_matrix
from kernel_builder.formats.variants import parse_variant, variant_for_entry

REMAKE = "run `make clean` and `make test` to recreate the test environments with the matrix's pins"


def test_reads_the_packaged_file() -> None:
    matrix = load_matrix()
    assert load_matrix(MATRIX_FILE).entries == matrix.entries
    assert len(matrix_data.ENTRIES) == len(matrix.entries)
    assert TORCH_VERSIONS == matrix.torch_versions
    assert (OLDEST_TORCH, NEWEST_TORCH) == (min(matrix.torch_versions), max(matrix.torch_versions))
    assert REQUIRED_TORCH_VERSIONS == tuple(sorted({e.torch for e in matrix.entries if e.required}))
    for torch in TORCH_VERSIONS:
        found = {
            (e.version[0], e.version[1])
            for e, system in matrix.pairs("cuda")
            if e.torch == torch and system == "x86_64-linux" and e.version is not None
        }
        assert matrix_data.cuda_versions(torch) == tuple(sorted(found))


def test_variant_names_are_the_matrix_entries_names() -> None:
    """The helper writes names by hand; they match the names the formats package gives the same entries."""
    matrix = load_matrix()
    for entry, system in matrix.pairs():
        if entry.backend in ("cpu", "cuda"):
            cuda = None if entry.version is None else (entry.version[0], entry.version[1])
            assert matrix_data.variant(entry.torch, cuda, system) == variant_for_entry(entry, system).name
    for name in (CPU_VARIANT, CUDA_VARIANT):
        assert parse_variant(name).name == name


def test_test_torch_is_chosen_from_the_matrix() -> None:
    """The CUDA test Torch is the newest of the test CUDA within the machines' pip cap; both pins are the
    matrix's, and both stay within the cap (a newer release in the matrix moves neither)."""
    matrix = load_matrix()
    cap = Version(TEST_TORCH_CAP)
    cuda = [
        e.torch
        for e, s in matrix.pairs("cuda")
        if e.version == TEST_CUDA and s == "x86_64-linux" and Version(str(e.torch_pin)) <= cap
    ]
    assert CUDA_TEST_TORCH == max(cuda)
    pins = {(e.torch, e.backend, e.version): e.torch_pin for e in matrix.entries}
    assert CPU_TEST_PIN == pins[CPU_TEST_TORCH, "cpu", None]
    assert CUDA_TEST_PIN == pins[CUDA_TEST_TORCH, "cuda", TEST_CUDA]
    assert Version(CPU_TEST_PIN) <= cap and Version(CUDA_TEST_PIN) <= cap


@pytest.mark.parametrize(
    ("command", "pin"), [("cpu-test-pin", CPU_TEST_PIN), ("cuda-test-pin", CUDA_TEST_PIN)]
)
def test_the_makefile_command_prints_the_pin(command: str, pin: str) -> None:
    """The Makefile runs it with a bare ``python3`` (``-I``: no site-packages, no tests/ on the path)."""
    result = subprocess.run(
        [sys.executable, "-I", str(matrix_data.__file__), command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, pin + "\n", "")


def test_the_makefile_command_refuses_other_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert matrix_data.main(["cpu-pin"]) == 2
    assert capsys.readouterr().err == "usage: matrix_data.py cpu-test-pin|cuda-test-pin\n"


def test_the_test_interpreter_has_the_cpu_test_pin() -> None:
    installed = Version(importlib.metadata.version("torch"))
    assert installed.base_version == CPU_TEST_PIN, f"the tests' torch is {installed}: {REMAKE}"
    if platform.system() == "Linux" and platform.machine() == "x86_64":
        from kernel_builder.formats.variants import variant_for_environment

        assert variant_for_environment().name == CPU_VARIANT


def test_the_cuda_interpreter_has_the_cuda_test_pin() -> None:
    python = cuda_python()
    if python is None:
        pytest.skip("no CUDA build interpreter (KB_TEST_CUDA_PYTHON or .venv-cu130)")
    code = "import importlib.metadata as m; print(m.version('torch'))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    installed = Version(result.stdout.strip())
    assert installed.base_version == CUDA_TEST_PIN, f"{python}'s torch is {installed}: {REMAKE}"
