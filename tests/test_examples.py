"""The examples' own test suites, run against fresh builds on this machine's CPU (slow).

Each example is copied out of the repository, built with `kernel-builder build` for the running torch (CPU),
and its `tests/` run in a subprocess, as a kernel author would run them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_fixtures import build, copy_example

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("example", "variants"),
    [
        ("relu", ["torch213-cxx11-cpu-x86_64-linux"]),
        ("activation", ["torch213-cxx11-cpu-x86_64-linux"]),
        ("relu-triton", ["torch-cpu", "torch-cuda"]),
    ],
)
def test_example_suite_passes_on_its_build(tmp_path: Path, example: str, variants: list[str]) -> None:
    root = copy_example(example, tmp_path / example)
    build(root).check()
    assert sorted(p.name for p in (root / "build").iterdir() if p.is_dir()) == variants
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(root / "tests"), "-q", "-p", "no:cacheprovider", "-o", "addopts="],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in summary and "skipped" not in summary, summary
