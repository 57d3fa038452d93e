"""Packages installed with ``pip install --no-deps --target`` into a directory of their own, once: other releases
of a dependency than the one in the tests' environment, for a child interpreter to put first on its path.

Concurrent callers (xdist workers, two ``make test``) wait on one lock, and the directory appears only complete.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path


def install_target(requirement: str, target: Path, *, marker: str, fresh: bool = False) -> Path:
    """``target``, holding ``requirement`` (no dependencies); installed unless ``target/marker`` is there already
    (``fresh``: installed again in any case, for a requirement whose answer changes, such as the newest release)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not fresh and (target / marker).exists():
            return target
        staging = target.parent / f".{target.name}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        command += ["--no-deps", "--no-compile", "--target", str(staging), requirement]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"cannot install {requirement}:\n{result.stdout}{result.stderr}")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target
