"""One ``kernel-builder build`` reads the project's sources once: a cold build and a no-op rebuild of
examples/relu each list the kernel's Python package directory once and open each id input once, for reading
(the plan's source scan, ``kernel_builder.pipeline.plan.scan``), and a literal op namespace fails the build
before anything is compiled.

The build runs in this process, so a ``sys.addaudithook`` hook sees every directory listing and every file it
opens. Such a hook cannot be removed: it is installed once and counts only while :data:`_RECORDING` holds a
recording (a module global, not a context variable, so that the builder's worker threads are seen too).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cpu_projects import copy_example
from matrix_data import CPU_VARIANT

from kernel_builder.config import KernelProject, load_project
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.builder import Builder, BuildOptions
from kernel_builder.pipeline.plan.sources import id_input_files, package_dir
from kernel_builder.pipeline.state import STATE_DIR


class _Recording:
    """What the build did to the watched paths: directory listings and opens for reading, per path."""

    def __init__(self, directories: set[str], files: set[str]) -> None:
        self.directories = directories
        self.files = files
        self.listed: Counter[str] = Counter()
        self.read: Counter[str] = Counter()


_RECORDING: _Recording | None = None
_HOOKED = False


def _path(value: object) -> str | None:
    if isinstance(value, (str, bytes, os.PathLike)):
        return os.path.normpath(os.path.abspath(os.fsdecode(value)))
    return None  # a file descriptor, or None (the current directory)


def _hook(event: str, args: tuple[object, ...]) -> None:
    recording = _RECORDING
    if recording is None:
        return
    if event in ("os.listdir", "os.scandir"):
        path = _path(args[0])
        if path in recording.directories:
            recording.listed[path] += 1
    elif event == "open":
        path = _path(args[0])
        flags = args[2]
        reads = isinstance(flags, int) and flags & os.O_ACCMODE in (os.O_RDONLY, os.O_RDWR)
        if path in recording.files and reads:
            recording.read[path] += 1


@contextmanager
def recording(directories: set[Path], files: set[Path]) -> Iterator[_Recording]:
    global _RECORDING, _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED = True
    record = _Recording({str(d) for d in directories}, {str(f) for f in files})
    _RECORDING = record
    try:
        yield record
    finally:
        _RECORDING = None


def _build(project: KernelProject) -> tuple[str, list[str]]:
    lines: list[str] = []
    report = Builder(project, BuildOptions(), log=lines.append).run()
    statuses = [f"{r.name} {r.status} {r.message}" for r in report.results]
    assert not report.failed, "\n".join([*statuses, *lines])
    (status,) = [r.status for r in report.results if r.name == CPU_VARIANT]
    return status, lines


@pytest.fixture
def relu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KernelProject:
    monkeypatch.setenv("KERNEL_BUILDER_COMPILER_CACHE", "off")  # no cache tool's reads, and a real compile
    root = copy_example("relu", tmp_path.resolve() / "relu")
    return load_project(root).project


@pytest.mark.slow  # a cold compile of examples/relu
def test_cold_and_noop_builds_list_the_package_once_and_read_each_input_once(relu: KernelProject) -> None:
    package = package_dir(relu)
    inputs = {relu.root / rel for rel in id_input_files(relu)}
    assert package / "__init__.py" in inputs and relu.root / "relu_cpu/relu_cpu.cpp" in inputs
    for kind in ("built", "up to date"):
        with recording({package}, inputs) as seen:
            status, lines = _build(relu)
        assert status == kind, lines
        assert dict(seen.listed) == {str(package): 1}, kind
        assert dict(seen.read) == {str(path): 1 for path in inputs}, kind


LITERAL = """\
import torch


@torch.library.custom_op("relu::literal", mutates_args=())
def literal(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
"""


def test_a_literal_op_namespace_fails_before_compiling(relu: KernelProject) -> None:
    """The lint needs only the sources: it runs once, at plan time, before any variant configures."""
    (package_dir(relu) / "literal.py").write_text(LITERAL, encoding="utf-8")
    project = load_project(relu.root).project
    with pytest.raises(BuildError) as info:
        Builder(project, BuildOptions(), log=lambda _line: None).run()
    assert str(info.value) == (
        "op registrations must use the unique namespace:\n"
        "  torch-ext/relu/literal.py:4: `custom_op` registers an op without add_op_namespace_prefix(...)\n"
        '  hint: use add_op_namespace_prefix("name") from ._ops (a literal namespace breaks side-by-side loading)'
    )
    assert not (relu.root / STATE_DIR / CPU_VARIANT).exists()
    assert not (relu.root / "build" / CPU_VARIANT).exists()
