"""Tests for the relu-triton example kernel.

Build the kernel first (`kernel-builder build examples/relu-triton`); the
tests load it from `examples/relu-triton/build/` and compare it with
`torch.relu`. On a machine without a GPU they exercise the CPU fallback.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

KERNEL_ROOT = Path(__file__).resolve().parents[1]
BUILD_DIR = KERNEL_ROOT / "build"

if not BUILD_DIR.is_dir():
    pytest.skip(
        f"{BUILD_DIR} does not exist: run `kernel-builder build examples/relu-triton` first",
        allow_module_level=True,
    )

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

SHAPES = [(1,), (7,), (1000,), (1024,), (1025,), (3, 257), (64, 4097), (2, 3, 5, 7), (0,), (4, 0)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _load(backend=None):
    from kernel_builder import get_local_kernel

    # Loading may warn about the build itself (e.g. one made from uncommitted
    # changes); that is not what these tests check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return get_local_kernel(BUILD_DIR, backend)


@pytest.fixture(scope="module")
def kernel():
    return _load()


def _randn(shape, dtype):
    generator = torch.Generator().manual_seed(0)
    return torch.randn(shape, generator=generator, dtype=torch.float32).to(device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_relu_fp32_shapes(kernel, shape):
    x = _randn(shape, torch.float32)
    y = kernel.relu(x)
    assert y.shape == x.shape
    assert y.dtype == x.dtype
    assert y.device == x.device
    torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1025,), (3, 257), (64, 4097)], ids=str)
def test_relu_dtypes(kernel, dtype, shape):
    x = _randn(shape, dtype)
    y = kernel.relu(x)
    assert y.dtype == dtype
    torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


def test_relu_special_values(kernel):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -1.5, 2.5], device=DEVICE)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0, equal_nan=True)


def test_relu_non_contiguous_input(kernel):
    x = _randn((64, 33), torch.float32).t()
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_relu_out_argument(kernel, dtype):
    x = _randn((5, 333), dtype)
    out = torch.full_like(x, 123.0)
    result = kernel.relu(x, out=out)
    assert result is out
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)


def test_relu_does_not_modify_input(kernel):
    x = _randn((1000,), torch.float32)
    before = x.clone()
    kernel.relu(x)
    torch.testing.assert_close(x, before, rtol=0, atol=0)


def test_relu_shape_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((17,), device=DEVICE, dtype=torch.float32)
    with pytest.raises(ValueError, match="same shape"):
        kernel.relu(x, out=out)


def test_relu_dtype_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((16,), device=DEVICE, dtype=torch.float16)
    with pytest.raises(ValueError, match="same dtype"):
        kernel.relu(x, out=out)


def test_relu_op_is_in_the_kernel_namespace(kernel):
    # The op lives under the build's unique namespace, not a literal one.
    x = _randn((129,), torch.float32)
    torch.testing.assert_close(kernel.ops.relu(x), torch.relu(x), rtol=0, atol=0)
    assert kernel.ops.relu.default.name().startswith("_relu_triton_")


def test_relu_backward(kernel):
    x = _randn((257,), torch.float32).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    grad = _randn((257,), torch.float32)
    kernel.relu(x).backward(grad)
    torch.relu(x_ref).backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=0, atol=0)


def test_relu_opcheck(kernel):
    # Schema, fake (meta) kernel and autograd registration are consistent.
    x = _randn((3, 65), torch.float32)
    torch.library.opcheck(kernel.ops.relu.default, (x,))
