"""Upstream ``kernels`` releases for the differential tests: the installed one (the test extra's pin, 0.19.1) and
older ones the suite still compares against (0.17.2), each in its own directory.

An older release is installed once per test run (or once per clone, into the tests' kernel-builder cache when
``KB_TEST_KERNEL_BUILDER_CACHE`` is set, as ``make test`` sets it) with ``pip install --no-deps --target``: its
dependencies are those of the installed release, already in this interpreter. A child interpreter that puts that
directory first on ``PYTHONPATH`` imports that release (:func:`release_env`); the installed one needs nothing.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_runs import run_dir

#: The release the test extra pins (pyproject.toml), installed in this interpreter.
INSTALLED = importlib.metadata.version("kernels")
#: The release kernel-builder was a drop-in for before 0.19, still compared against where a test says so.
KERNELS_0_17_2 = "0.17.2"


def _install(version: str, target: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            f"kernels=={version}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"cannot install kernels=={version} for the differential tests:\n{result.stderr[-2000:]}")


def release_dir(factory: pytest.TempPathFactory, version: str) -> Path | None:
    """A directory holding ``kernels`` ``version`` (``None`` for the installed release), made once."""
    if version == INSTALLED:
        return None
    kept = os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE")
    base = Path(kept) / "upstream-kernels" if kept else run_dir(factory) / "upstream-kernels"
    directory = base / version
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / "installed"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            target = directory / "site"
            _install(version, target)
            done.write_text(version, encoding="utf-8")
    return directory / "site"


def release_env(factory: pytest.TempPathFactory, version: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child interpreter that imports ``kernels`` ``version``; checks that it does."""
    site = release_dir(factory, version)
    if site is None:
        return env
    path = os.pathsep.join(part for part in (str(site), env.get("PYTHONPATH", "")) if part)
    child = {**env, "PYTHONPATH": path}
    probe = subprocess.run(
        [sys.executable, "-c", "import kernels; print(kernels.__version__)"],
        capture_output=True,
        text=True,
        env=child,
        check=False,
    )
    assert probe.stdout.strip() == version, probe.stderr
    return child
