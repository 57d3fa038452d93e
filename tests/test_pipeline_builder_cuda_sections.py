"""A real ``--arch 9.0a`` build (nvcc 13.0, Torch's CUDA build, no GPU) of a kernel with sections for 9.0a,
10.0a and 8.0+ whose binding registers every section's ops (:mod:`sectioned_projects`): it builds, passes the
import check (the extension links and loads), says what it did with the 10.0a section, and holds one cubin per
section, each for the capability chosen for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_outputs import cuobjdump, extension, tool_output
from build_runs import metadata, require_cuda_python, run_cli
from cuobjdump_listing import cuobjdump_names
from sectioned_projects import sectioned_project

pytestmark = [pytest.mark.slow, pytest.mark.cuda]


def test_arch_9_0a_builds_every_section(tmp_path: Path) -> None:
    python = require_cuda_python()
    root = sectioned_project(tmp_path / "kb-sections")
    run = run_cli(["build", root, "--arch", "9.0a", "--python", python])
    assert run.returncode == 0, run.output
    assert "(CUDA archs: 9.0, 9.0a, 10.0a)" in run.stderr
    line = (root / "build.toml").read_text(encoding="utf-8").splitlines().index("[kernel.add_sm100]") + 1
    assert (
        f"{root}/build.toml:{line}: note: [kernel.add_sm100]: none of its capabilities (10.0a) is among --arch "
        "9.0a: compiled for 10.0a only, its lowest, so the extension links and loads; its ops do not run on the "
        "selected GPUs"
    ) in run.stderr
    assert "can be built with CUDA" not in run.output
    [variant] = [d for d in (root / "build").iterdir() if d.is_dir()]
    data = metadata(variant)
    assert data["backend"] == {"type": "cuda", "archs": ["9.0", "9.0a", "10.0a"]}
    assert data["arch-selection"] == "explicit"
    listing = tool_output([cuobjdump(python), "--list-elf", extension(variant)])
    assert cuobjdump_names(listing) == {"sm_90", "sm_90a", "sm_100a"}
