"""On a GPU: ``--arch native`` on a kernel with sections for other GPUs (:mod:`sectioned_projects`), and the
import check of a kernel that registers fakes, autograd formulas and ops at import (:mod:`registering_projects`),
both built with this machine's Torch and run. Skipped without a visible CUDA GPU.

On an H200 (9.0), the 9.0a and generic sections run; the 10.0a section is compiled for 10.0a only (its lowest),
so its op is registered and the extension loads, and calling it fails with CUDA's "no kernel image" error.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from registering_projects import registering_project
from sectioned_projects import sectioned_project

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a visible CUDA GPU (run on the GPU machine)"
    ),
]


def _build(root: Path, *extra: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "build", str(root), *extra],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    print(
        f"$ kernel-builder build {root.name} {' '.join(extra)} -> exit {result.returncode}\n{result.stderr}"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stderr


def _variant(root: Path) -> Path:
    [variant] = [d for d in (root / "build").iterdir() if "-cu" in d.name]
    return variant


def test_arch_native_builds_and_runs_a_kernel_with_sections_for_other_gpus(tmp_path: Path) -> None:
    import kernel_builder

    major, minor = torch.cuda.get_device_capability()
    root = sectioned_project(tmp_path / "kb-sections")
    stderr = _build(root, "--arch", "native")
    assert "can be built with CUDA" not in stderr
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", UserWarning
        )  # a build outside a git checkout has no provenance commit
        kernel = kernel_builder.get_local_kernel(_variant(root))
    x = torch.zeros(1000, device="cuda")
    ran, failed = [], {}
    for name in ("add_sm90", "add_sm100", "add_generic"):
        try:
            getattr(kernel, name)(x, 1.0)
            torch.cuda.synchronize()
            ran.append(name)
        except RuntimeError as exc:
            failed[name] = str(exc).splitlines()[0]
    print(f"GPU capability {major}.{minor}; ran: {ran}; failed: {failed}; x[0] = {x[0].item()}")
    assert "add_generic" in ran
    if (major, minor) == (9, 0):
        assert ran == ["add_sm90", "add_generic"] and x[0].item() == 2.0
        assert failed["add_sm100"].startswith("add_sm100: the kernel did not launch: "), failed
        assert "no kernel image is available for execution on the device" in failed["add_sm100"]


def test_a_kernel_that_registers_at_import_builds_and_runs(tmp_path: Path) -> None:
    """Torch 2.11 refuses a second fake of an op in one process: the import check must import the variant once
    per process."""
    root = registering_project(tmp_path / "kb-registers", backends=("cuda",))
    stderr = _build(root, "--arch", "native")
    assert "import check" not in stderr
    code = (
        "import sys, torch, kernels\n"
        "from pathlib import Path\n"
        "k = kernels.get_local_kernel(Path(sys.argv[1]))\n"
        "x = torch.arange(4.0, device='cuda', requires_grad=True)\n"
        "y = k.scale(x, 3.0); y.sum().backward()\n"
        "torch.library.opcheck(k.ops.scale, (torch.randn(5, device='cuda'), 2.0))\n"
        "print('kernels:', y.tolist(), x.grad.tolist(), k.shift(torch.ones(2, device='cuda'), 0.5).tolist(),"
        " k.twice(torch.ones(2, device='cuda')).tolist())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(_variant(root))], capture_output=True, text=True, check=False
    )
    print(result.stdout, result.stderr[-2000:])
    assert result.returncode == 0
    assert "kernels: [0.0, 3.0, 6.0, 9.0] [3.0, 3.0, 3.0, 3.0] [1.5, 1.5] [2.0, 2.0]" in result.stdout
