"""``buildenv.torch_details`` imports Torch once per environment; later builds read the kept answer."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kernel_builder.common import processes
from kernel_builder.pipeline.environment import interpreter as buildenv


@pytest.fixture
def interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> buildenv.BuildInterpreter:
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    return buildenv.quick_probe()


@pytest.mark.slow
def test_second_call_reads_the_cache(
    interpreter: buildenv.BuildInterpreter, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = buildenv.torch_details(interpreter)
    assert first.version == interpreter.torch_version

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch was imported again")

    monkeypatch.setattr(processes, "run", no_subprocess)  # how buildenv starts the interpreter
    assert buildenv.torch_details(interpreter) == first


@pytest.mark.slow
def test_another_torch_is_asked_again(
    interpreter: buildenv.BuildInterpreter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buildenv.torch_details(interpreter)
    fake_torch = tmp_path / "torch"
    fake_torch.mkdir()
    (fake_torch / "version.py").write_text("__version__ = '9.9.9'\ncuda = None\n", encoding="utf-8")
    other = buildenv.BuildInterpreter(**{**interpreter.__dict__, "torch_dir": fake_torch})
    calls: list[object] = []
    real_run = processes.run

    def counting(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        result: subprocess.CompletedProcess[str] = real_run(*args, **kwargs)
        return result

    monkeypatch.setattr(processes, "run", counting)
    buildenv.torch_details(other)
    assert len(calls) == 1


@pytest.mark.slow
def test_a_damaged_cache_entry_is_replaced(interpreter: buildenv.BuildInterpreter, tmp_path: Path) -> None:
    first = buildenv.torch_details(interpreter)
    (entry,) = (tmp_path / "cache" / "torch-details").iterdir()
    entry.write_text("{not json", encoding="utf-8")
    assert buildenv.torch_details(interpreter) == first
    assert entry.read_text(encoding="utf-8").startswith('{"')
