"""Stand-ins for the inputs of the pipeline stages (plan, generate, package): a build interpreter that runs
nothing, a faked host, projects loaded from files written into ``tmp_path``.

``fake_interpreter`` gives the :class:`BuildInterpreter` a quick probe would return for a Torch of the given
version and CUDA version, so planning and generation tests need neither that Torch nor a subprocess. The
versions of ``CPU_213`` / ``CU130_213`` are the fixtures' own; tests that need a matrix entry's Torch read it
from tests/matrix_data.py.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from kernel_builder.config import KernelProject, load_project
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter


def fake_interpreter(
    torch_version: str = "2.13.0+cpu",
    *,
    cuda: str | None = None,
    hip: str | None = None,
    purelib: Path = Path("/nonexistent/site-packages"),
    python: Path = Path("/opt/python/bin/python3"),
) -> BuildInterpreter:
    return BuildInterpreter(
        python=python,
        torch_dir=purelib / "torch",
        torch_version=torch_version,
        torch_builds=tuple((key, value) for key, value in (("cuda", cuda), ("hip", hip)) if value),
        python_version=(3, 11),
        python_include=Path("/opt/python/include/python3.11"),
        purelib=purelib,
    )


CPU_213 = fake_interpreter("2.13.0+cpu")
CU130_213 = fake_interpreter("2.13.0+cu130", cuda="13.0")


def fake_host(monkeypatch: pytest.MonkeyPatch, machine: str = "x86_64", system: str = "Linux") -> None:
    """Make planning see this host (``platform.machine()`` / ``platform.system()``)."""
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(platform, "system", lambda: system)


def load(root: Path) -> KernelProject:
    return load_project(root).project


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path → text or bytes) under ``root``; returns ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root
