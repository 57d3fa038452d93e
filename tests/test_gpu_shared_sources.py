"""On a GPU: a kernel whose two CUDA sections list one file (:mod:`shared_source_projects`; sections for 9.0a and
for 8.0 and 9.0) builds with ``--arch native``, and both sections' ops run, each through its own kernel and the
shared one. Skipped without a visible CUDA GPU of capability 9.0 (the 9.0a section runs on Hopper only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from shared_source_projects import SECTIONS, shared_source_project

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
        reason="needs a visible Hopper GPU (run on the GPU machine)",
    ),
]


def test_both_sections_ops_run_on_the_gpu(tmp_path: Path) -> None:
    import kernel_builder

    root = shared_source_project(tmp_path / "kb-shared", "cuda")
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "build", str(root), "--arch", "native"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    print(f"$ kernel-builder build kb-shared --arch native -> exit {result.returncode}\n{result.stderr}")
    assert result.returncode == 0, result.stdout + result.stderr
    kernel = kernel_builder.get_local_kernel(root)
    for name in SECTIONS:
        x = torch.ones(1000, device="cuda")
        getattr(kernel, name)(x)
        torch.cuda.synchronize()
        torch.testing.assert_close(x, torch.full_like(x, 3.0))
        print(f"{name}: ok")
