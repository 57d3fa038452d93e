"""Real builds of a kernel whose two sections list one file (:mod:`shared_source_projects`): the file is compiled
once, with both sections' flags (it stops the compile otherwise), so the extension links; on the CPU both
sections' ops run here; the CUDA build (nvcc 13.0, Torch's CUDA build, no GPU) holds the shared file's kernel
for the union of the sections' capabilities (tests/test_gpu_shared_sources.py runs it on a GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from build_outputs import cuobjdump, extension, tool_output
from build_runs import NO_IMPORT_CHECK, require_cuda_python, run_cli
from cuobjdump_listing import cuobjdump_names
from shared_source_projects import SECTIONS, shared_source_project

pytestmark = pytest.mark.slow

_RUN = """
import json, sys, torch, kernel_builder
kernel = kernel_builder.get_local_kernel(sys.argv[1])
print(json.dumps({name: getattr(kernel, name)(torch.ones(3)).tolist() for name in sys.argv[2:]}))
"""


def test_cpu_sections_sharing_a_file_build_link_and_run(tmp_path: Path) -> None:
    root = shared_source_project(tmp_path / "kb-shared")
    run = run_cli(["build", root, NO_IMPORT_CHECK])
    assert run.returncode == 0, run.output
    result = subprocess.run(
        [sys.executable, "-c", _RUN, str(root), *SECTIONS], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '{"twice_a": [3.0, 3.0, 3.0], "twice_b": [3.0, 3.0, 3.0]}'


@pytest.mark.cuda
def test_cuda_sections_sharing_a_file_build_and_link(tmp_path: Path) -> None:
    python = require_cuda_python()
    root = shared_source_project(tmp_path / "kb-shared", "cuda")
    run = run_cli(["build", root, "--python", python])  # the import check loads it: the extension linked
    assert run.returncode == 0, run.output
    [variant] = [d for d in (root / "build").iterdir() if d.is_dir()]
    listing = tool_output([cuobjdump(python), "--list-elf", extension(variant)])
    assert cuobjdump_names(listing) == {"sm_80", "sm_90", "sm_90a"}
