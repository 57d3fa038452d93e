"""``kernel_builder.load`` says what it does while it compiles (stages, compile steps, elapsed time, on standard
error) and stays quiet when nothing changed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from matrix_data import CPU_VARIANT

from kernel_builder.authoring.dev import CompileProgress
from kernel_builder.authoring.scaffold import InitOptions, init_project

REPO = Path(__file__).resolve().parent.parent
LOAD = "import sys, kernel_builder; kernel_builder.load(sys.argv[1]); print('loaded')"


def test_compile_progress_lines() -> None:
    lines: list[str] = []
    progress = CompileProgress(lines.append)
    progress.stage("v", "configuring")
    progress.step("v", 1, 3)
    progress.step("v", 1, 3)  # the same step again: shown once
    progress.step("v", 3, 3)
    progress.stage("v", "up to date")  # the quiet outcome
    assert [line.split("] ", 1)[1] for line in lines] == ["v: configuring", "v: [1/3] compile steps",
                                                         "v: [3/3] compile steps"]  # fmt: skip
    lines.clear()
    named = CompileProgress(lines.append)
    named.step("v", 0, 6, "precompiling Torch's headers (<ATen/core/Tensor.h>)")
    named.step("v", 1, 6, "compiling relu_cpu/relu_cpu.cpp")
    assert [line.split("] ", 1)[1] for line in lines] == [
        "v: [0/6] compile steps: precompiling Torch's headers (<ATen/core/Tensor.h>)",
        "v: [1/6] compile steps: compiling relu_cpu/relu_cpu.cpp",
    ]
    assert all(line.startswith("kernel_builder.load: [") and " s] " in line for line in lines)


@pytest.mark.slow
def test_load_shows_progress_while_compiling_and_nothing_when_up_to_date(tmp_path: Path) -> None:
    root = tmp_path / "my-kernel"
    init_project(root, InitOptions(name="my-kernel", backends=("cpu",)))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }

    def load() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", LOAD, str(root)], capture_output=True, text=True, env=env, check=False
        )

    first = load()
    assert first.returncode == 0, first.stderr
    assert f"s] {CPU_VARIANT}: compiling" in first.stderr
    # The precompiled header, the long first step, is named while it builds, and counted: [0/N] ... [N/N].
    steps = re.findall(r"\[(\d+)/(\d+)\] compile steps(?:: (.*))?$", first.stderr, re.MULTILINE)
    assert steps[0][0] == "0" and steps[0][2].startswith("precompiling Torch's headers (<"), first.stderr
    assert steps[-1][0] == steps[-1][1] == steps[0][1], first.stderr
    assert any(what.startswith("compiling ") for _, _, what in steps)
    assert "compile steps" in first.stderr and f"s] {CPU_VARIANT}: built" in first.stderr
    again = load()
    assert again.returncode == 0 and again.stdout == "loaded\n"
    assert "kernel_builder.load:" not in again.stderr, again.stderr
