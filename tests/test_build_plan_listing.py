"""``list-variants`` says what it is doing while it probes (each variant: what is asked, the verdict, the elapsed
time) and asks pip each distinct question once, so a project with CUDA candidates and no build environment
cached yet is listed in seconds.

pip answers from a local directory of metadata-only torch wheels (no index, no configuration file), as in
``test_build_compile_provision.py``; the CUDA compiler is looked for as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from test_build_compile_provision import CU130_RUNTIME, write_wheel

import kernel_builder.build.compile.provision as provision
from kernel_builder.build.plan.listing import list_variants
from kernel_builder.config import load_project

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "examples" / "relu"


@pytest.fixture
def local_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    directory = tmp_path / "wheels"
    write_wheel(directory, "2.13.0+cpu", [])
    write_wheel(directory, "2.13.0", [CU130_RUNTIME])
    env = {
        "PIP_CONFIG_FILE": "/dev/null", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(directory),
        "KERNEL_BUILDER_CACHE": str(tmp_path / "cache"),  # no build environment exists yet
    }  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    provision.resolve_torch.cache_clear()
    provision.toolkit_problem.cache_clear()
    return env


def test_each_distinct_pip_question_is_asked_once(
    local_pip: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: Counter[tuple[str, str | None]] = Counter()
    real = provision._ask_pip

    def counting(requirement: str, index_url: str | None) -> tuple[dict[str, object] | None, str]:
        asked[(requirement, index_url)] += 1
        return real(requirement, index_url)

    monkeypatch.setattr(provision, "_ask_pip", counting)
    stages: list[tuple[str, str]] = []

    class Record:
        def stage(self, variant: str, stage: str) -> None:
            stages.append((variant, stage))

        def step(self, variant: str, done: int, total: int) -> None:
            pass

    candidates = list_variants(load_project(RELU).project, progress=Record())
    assert asked and max(asked.values()) == 1, asked
    probed = {variant for variant, stage in stages if stage.startswith(("asking pip", "looking for"))}
    # Each probed variant ends with a verdict that agrees with the listing.
    verdicts = {
        variant: stage for variant, stage in stages if stage.startswith(("buildable", "not buildable"))
    }
    assert set(verdicts) == probed
    for candidate in candidates:
        if candidate.name in verdicts:
            assert verdicts[candidate.name].startswith("buildable") == candidate.buildable, candidate


@pytest.mark.slow
def test_list_variants_shows_progress_and_finishes_in_seconds(local_pip: dict[str, str]) -> None:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "list-variants", str(RELU)], capture_output=True, text=True,
        env={**os.environ, **local_pip}, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert any(
        "s] torch213-cxx11-cu130-x86_64-linux: asking pip for torch 2.13.0 (cu130)" in line for line in lines
    )
    assert any("s] torch213-cxx11-cu130-x86_64-linux: buildable here" in line for line in lines), (
        result.stderr
    )
    assert lines[-1].startswith("probed ") and lines[-1].endswith(" s")
    assert "torch213-cxx11-cu130-x86_64-linux" in result.stdout
    assert seconds < 60, f"list-variants took {seconds:.1f} s"
