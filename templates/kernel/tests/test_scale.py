"""my-kernel against PyTorch: build first (`kernel-builder build` or `nix build`), then `pytest tests`."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BUILD_DIR = Path(__file__).resolve().parents[1] / "build"
if not BUILD_DIR.is_dir():
    pytest.skip(f"{BUILD_DIR} does not exist: run `kernel-builder build` first", allow_module_level=True)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(scope="module")
def kernel():
    from kernel_builder import get_local_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. a build of uncommitted changes
        return get_local_kernel(BUILD_DIR, None if DEVICE == "cuda" else "cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(0,), (7,), (1025,), (3, 257)], ids=str)
def test_scale_matches_torch(kernel, dtype, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(DEVICE, dtype)
    torch.testing.assert_close(kernel.scale(x, 0.5), x * 0.5)


def test_scale_into_out(kernel):
    x = torch.randn(100, device=DEVICE)
    out = torch.empty_like(x)
    assert kernel.scale(x, -2.0, out=out) is out
    torch.testing.assert_close(out, x * -2.0)


def test_scale_shape_mismatch_raises(kernel):
    x = torch.randn(16, device=DEVICE)
    with pytest.raises(RuntimeError, match="same shape"):
        kernel.scale(x, 1.0, out=torch.empty(17, device=DEVICE))
