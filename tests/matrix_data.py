"""The supported versions, as the tests see them: read from ``kernel_builder/formats/build-matrix.json``.

A Torch matrix bump edits that one file; tests that ask "which Torch is the newest", "which CUDA versions
does Torch X have", "which variant does this host's test Torch build" ask this module instead of writing the
answer down. Versions still written in tests are the fixture's own facts (a fake interpreter, a test's own
matrix, a hub repo's variant names, a deliberately unsupported or historical version), not the matrix's.

The test environments' Torch pins are derived here too, and the Makefile installs them
(``python3 tests/matrix_data.py cpu-test-pin``): this module uses the standard library only, so it runs
before any environment exists.

- the CPU test Torch (``.venv``, the interpreter running the tests): :data:`CPU_TEST_TORCH`, a host fact;
- the CUDA test Torch (``.venv-cu130``, the CUDA tests' build interpreter): the newest Torch with a cuda
  :data:`TEST_CUDA` entry for ``x86_64-linux`` whose pin is within :data:`TEST_TORCH_CAP`.

Both stay within what the test machines' pip installs without fetching multi-GB wheels on every run: a matrix
bump that adds a Torch release beyond the cap changes neither.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MATRIX_FILE = Path(__file__).resolve().parent.parent / "kernel_builder" / "formats" / "build-matrix.json"

Version = tuple[int, int]
"""A ``(major, minor)`` version: Torch ``(2, 13)``, CUDA ``(13, 0)``."""

TEST_CUDA: Version = (13, 0)
"""The CUDA of the machines that run the tests (nvcc 13.0 here, in CI and on the GPU host); ``.venv-cu130``
is named after it. A host fact, not a matrix one."""

HOST_SYSTEM = "x86_64-linux"
"""The only system kernel-builder builds on (and the tests run on)."""


def major_minor(text: str) -> Version:
    """``"2.13"`` or ``"13.0.2"`` → ``(2, 13)`` / ``(13, 0)``."""
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


ENTRIES: tuple[dict[str, Any], ...] = tuple(json.loads(MATRIX_FILE.read_text(encoding="utf-8"))["entries"])
"""The raw entries, in file order (``load_matrix()`` gives the validated ones)."""


def entries(
    backend: str | None = None, *, torch: Version | None = None, system: str | None = None
) -> list[dict[str, Any]]:
    """The raw entries of one backend / Torch / system (each ``None`` means any)."""
    return [
        entry
        for entry in ENTRIES
        if (backend is None or entry["backend"] == backend)
        and (torch is None or major_minor(entry["torch"]) == torch)
        and (system is None or system in entry["systems"])
    ]


TORCH_VERSIONS: tuple[Version, ...] = tuple(sorted({major_minor(e["torch"]) for e in ENTRIES}))
"""Every Torch of the matrix, oldest first."""
OLDEST_TORCH, NEWEST_TORCH = TORCH_VERSIONS[0], TORCH_VERSIONS[-1]

REQUIRED_TORCH_VERSIONS: tuple[Version, ...] = tuple(
    sorted({major_minor(e["torch"]) for e in ENTRIES if e["required"]})
)
"""The Torch versions with at least one required entry, oldest first."""
OLDEST_REQUIRED_TORCH, NEWEST_REQUIRED_TORCH = REQUIRED_TORCH_VERSIONS[0], REQUIRED_TORCH_VERSIONS[-1]


def cuda_versions(torch: Version | None = None, system: str | None = HOST_SYSTEM) -> tuple[Version, ...]:
    """The CUDA versions of the matrix (of one Torch, on one system), oldest first."""
    return tuple(sorted({major_minor(e["version"]) for e in entries("cuda", torch=torch, system=system)}))


def is_required(
    backend: str, *, torch: Version | None = None, cuda: Version | None = None, system: str | None = None
) -> bool:
    """Whether any matching entry is required (``cuda`` narrows cuda entries to one version)."""
    return any(
        e["required"]
        for e in entries(backend, torch=torch, system=system)
        if cuda is None or major_minor(e["version"]) == cuda
    )


def torch_pin(torch: Version, backend: str = "cpu", cuda: Version | None = None) -> str:
    """The ``torch-pin`` of the matrix entry of ``torch`` for ``backend`` (and ``cuda``)."""
    (entry,) = [
        e
        for e in entries(backend, torch=torch, system=HOST_SYSTEM)
        if cuda is None or major_minor(e["version"]) == cuda
    ]
    return str(entry["torch-pin"])


TEST_TORCH_CAP = "2.14.1"
"""The newest Torch the test machines' pip installs: their pip configuration has a constraints file with
``torch<=2.14.1`` (the releases on their disk). A host fact, like :data:`TEST_CUDA`."""

CPU_TEST_TORCH: Version = (2, 13)
"""The Torch of the tests' own interpreter (``.venv``): the newest release whose CPU-only build the test machines
have (``torch-2.13.0+cpu`` among pip's find-links; PyPI's Linux wheels are CUDA builds and PyTorch's CPU index is
out of their reach). A host fact; :func:`torch_pin` checks that the matrix has its cpu entry."""


def _within_cap(pin: str) -> bool:
    return tuple(int(part) for part in pin.split(".")) <= tuple(int(p) for p in TEST_TORCH_CAP.split("."))


CUDA_TEST_TORCH: Version = max(
    major_minor(e["torch"])
    for e in entries("cuda", system=HOST_SYSTEM)
    if major_minor(e["version"]) == TEST_CUDA and _within_cap(e["torch-pin"])
)
"""The Torch of the CUDA tests' build interpreter (``.venv-cu130``)."""
CPU_TEST_PIN = torch_pin(CPU_TEST_TORCH, "cpu")
CUDA_TEST_PIN = torch_pin(CUDA_TEST_TORCH, "cuda", TEST_CUDA)


def dotted(version: Version) -> str:
    """``(2, 13)`` → ``"2.13"``."""
    return f"{version[0]}.{version[1]}"


def tag(torch: Version) -> str:
    """``(2, 13)`` → ``"torch213"`` (the framework part of a variant name)."""
    return f"torch{torch[0]}{torch[1]}"


def compute(cuda: Version | None = None) -> str:
    """``None`` → ``"cpu"``, ``(13, 0)`` → ``"cu130"``."""
    return "cpu" if cuda is None else f"cu{cuda[0]}{cuda[1]}"


def variant(torch: Version, cuda: Version | None = None, system: str = HOST_SYSTEM) -> str:
    """The variant name of a Torch build: ``torch213-cxx11-cpu-x86_64-linux`` (``cxx11`` on Linux only)."""
    abi = "-cxx11" if system.endswith("-linux") else ""
    return f"{tag(torch)}{abi}-{compute(cuda)}-{system}"


CPU_VARIANT = variant(CPU_TEST_TORCH)
"""The variant the tests' own interpreter builds: ``torch213-cxx11-cpu-x86_64-linux`` today (optional since
Torch 2.15 joined the required set)."""
CUDA_VARIANT = variant(CUDA_TEST_TORCH, TEST_CUDA)
"""The variant the CUDA test interpreter builds: ``torch214-cxx11-cu130-x86_64-linux`` today."""

_COMMANDS = {"cpu-test-pin": CPU_TEST_PIN, "cuda-test-pin": CUDA_TEST_PIN}


def main(argv: list[str]) -> int:
    """``python3 tests/matrix_data.py cpu-test-pin|cuda-test-pin``: print the pin (for the Makefile)."""
    if len(argv) != 1 or argv[0] not in _COMMANDS:
        print(f"usage: matrix_data.py {'|'.join(_COMMANDS)}", file=sys.stderr)
        return 2
    print(_COMMANDS[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
