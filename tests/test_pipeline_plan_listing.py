"""``list-variants`` says what it is doing while it probes (each index listing fetched, each variant: what is
asked, the verdict, the elapsed time) and answers every torch question from one listing per source, so a
project with CUDA candidates and nothing cached is listed in seconds.

The sources hold metadata-only torch wheels: a loopback simple-API index (``simple_index.py``) or a local
find-links directory (no configuration file), as in ``test_pipeline_environment_provision.py``; the CUDA compiler is
looked for as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from simple_index import SimpleIndex, serve
from test_pipeline_environment_provision import CU130_RUNTIME, write_wheel

import kernel_builder.pipeline.environment.provision as provision
from kernel_builder.config import load_project
from kernel_builder.pipeline.environment import wheel_index
from kernel_builder.pipeline.plan.listing import list_variants

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
    wheel_index.clear_listings()
    return env


@pytest.fixture
def loopback_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleIndex]:
    """pip configured with one index, a loopback double serving stand-in torch wheels (no find-links, no
    configuration file)."""
    directory = tmp_path / "files"
    write_wheel(directory, "2.13.0+cpu", [])
    write_wheel(directory, "2.13.0", [CU130_RUNTIME])
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    with serve(SimpleIndex(directory)) as index:
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))  # nothing cached
        provision.resolve_torch.cache_clear()
        provision.toolkit_problem.cache_clear()
        wheel_index.clear_listings()
        yield index
    provision.resolve_torch.cache_clear()
    provision.toolkit_problem.cache_clear()
    wheel_index.clear_listings()


class Record:
    def __init__(self) -> None:
        self.stages: list[tuple[str, str]] = []

    def stage(self, variant: str, stage: str) -> None:
        self.stages.append((variant, stage))

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        pass


def test_every_torch_question_is_answered_from_one_listing(loopback_index: SimpleIndex) -> None:
    """The index is asked for torch's listing once, however many pins and flavours are probed, and the
    untagged wheel's metadata is read with range requests, not downloaded (pip's dry run asked the index
    again for every question)."""
    record = Record()
    candidates = list_variants(load_project(RELU).project, progress=record)
    assert loopback_index.count("/simple/torch/") == 1, loopback_index.requests
    reads = [(path, byte_range) for path, byte_range in loopback_index.requests if path.startswith("/files/")]
    assert reads and all(byte_range for _, byte_range in reads), reads
    assert len(reads) <= 3, reads  # one untagged wheel: its zip end, directory and METADATA
    assert ("indexes", f"{loopback_index.url}: 2 torch wheel files") in record.stages
    probed = {v for v, stage in record.stages if stage.startswith(("finding torch", "looking for"))}
    verdicts = {v: stage for v, stage in record.stages if stage.startswith(("buildable", "not buildable"))}
    assert probed and set(verdicts) == probed
    by_name = {c.name: c for c in candidates}
    for variant, verdict in verdicts.items():
        assert verdict.startswith("buildable") == by_name[variant].buildable, by_name[variant]
    # Every flavour of the pin the stand-in index has was judged from that one listing.
    cu132 = [c for c in candidates if c.name.startswith("torch213-cxx11-cu132-x86_64")]
    for candidate in cu132:
        assert candidate.reason is not None and (
            "no CUDA 13.2 compiler" in candidate.reason
            or "CUDA 13.2 toolkit cannot be installed" in candidate.reason
            or "pip finds only 2.13.0+cpu (cpu build), 2.13.0 (cu130 build)" in candidate.reason
        ), candidate.reason


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
        "s] torch213-cxx11-cu130-x86_64-linux: finding torch 2.13.0 (cu130) in the index listings" in line
        for line in lines
    )
    assert any("s] torch213-cxx11-cu130-x86_64-linux: buildable here" in line for line in lines), (
        result.stderr
    )
    assert lines[-1].startswith("probed ") and lines[-1].endswith(" s")
    assert "torch213-cxx11-cu130-x86_64-linux" in result.stdout
    assert seconds < 60, f"list-variants took {seconds:.1f} s"
