"""The import check started before the variant exists (``ImportCheckWorker``): it imports Torch and the loaders
while the variant compiles, then checks the assembled variant exactly as a fresh interpreter would; the ABI check
runs beside it and its error wins; an interpreter that is not needed, or that died, leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from build_runs import build
from cpu_projects import quick_project

from kernel_builder.errors import BuildError
from kernel_builder.formats.metadata import digest_files
from kernel_builder.pipeline.check.import_check import ImportCheckWorker, check_import
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, quick_probe


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pure-Python variant of the quick project, built and checked the usual way."""
    root = quick_project(tmp_path_factory.mktemp("worker") / "kb-quick")
    build(root, "--backend", "cuda")
    return root / "build" / "torch-cuda"


@pytest.fixture(scope="module")
def python() -> BuildInterpreter:
    return quick_probe()


def _broken(good: Path, dest: Path) -> Path:
    """``good`` with an ``__init__.py`` that raises, its digest updated (so only the kernel's error remains)."""
    variant = dest / "torch-cuda"
    shutil.copytree(good, variant)
    (variant / "__init__.py").write_text("raise RuntimeError('kernel bug')\n", encoding="utf-8")
    metadata = json.loads((variant / "metadata.json").read_text(encoding="utf-8"))
    files = {k: v for k, v in digest_files(variant).items() if k != "metadata.json"}
    metadata["digest"]["files"] = files
    (variant / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return variant


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
def test_a_prestarted_check_passes_a_good_variant(good: Path, python: BuildInterpreter) -> None:
    worker = ImportCheckWorker(python)
    pid = worker.pid
    assert pid is not None
    time.sleep(0.5)  # it is importing Torch and the loaders meanwhile; the variant comes later
    assert check_import(python, good, worker=worker) is None
    assert worker.pid is None and _gone(pid)


@pytest.mark.slow
def test_a_prestarted_check_fails_a_broken_variant(
    good: Path, python: BuildInterpreter, tmp_path: Path
) -> None:
    variant = _broken(good, tmp_path)
    with pytest.raises(BuildError, match="import check failed") as failed:
        check_import(python, variant, worker=ImportCheckWorker(python))
    assert "RuntimeError: kernel bug" in str(failed.value)
    # The same verdict as a check started afresh.
    with pytest.raises(BuildError, match="RuntimeError: kernel bug"):
        check_import(python, variant)


def test_the_abi_error_wins_and_stops_the_check(good: Path, python: BuildInterpreter, tmp_path: Path) -> None:
    worker = ImportCheckWorker(python)
    pid = worker.pid
    assert pid is not None
    ran: list[str] = []

    def abi_check() -> None:
        ran.append("abi")
        raise BuildError("ABI check failed:\n  python-abi: PyUnicode_AsUTF8 is not in the stable ABI (abi3)")

    with pytest.raises(BuildError, match="^ABI check failed"):
        check_import(python, _broken(good, tmp_path), worker=worker, alongside=abi_check)
    assert ran == ["abi"]
    assert worker.pid is None and _gone(pid)


@pytest.mark.slow
def test_alongside_runs_while_the_check_runs(good: Path, python: BuildInterpreter) -> None:
    ran: list[str] = []
    assert check_import(python, good, alongside=lambda: ran.append("abi")) is None
    assert ran == ["abi"]


def test_an_unused_worker_is_ended(python: BuildInterpreter) -> None:
    """A failed compile: no variant comes, and the waiting interpreter goes at once."""
    worker = ImportCheckWorker(python)
    pid = worker.pid
    assert pid is not None
    worker.close()
    assert worker.pid is None and _gone(pid)
    worker.close()  # twice is harmless


@pytest.mark.slow
def test_a_worker_that_died_is_replaced_by_a_fresh_check(good: Path, python: BuildInterpreter) -> None:
    """Killed while it waited (the OOM killer, say): the check still runs, in a new interpreter."""
    worker = ImportCheckWorker(python)
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    assert check_import(python, good, worker=worker) is None
