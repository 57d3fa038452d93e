"""Tests for the activation example kernel.

Build the kernel first (`kernel-builder build examples/activation`); the tests
load it from `examples/activation/build/` and compare it with
`torch.nn.functional`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

KERNEL_ROOT = Path(__file__).resolve().parents[1]
BUILD_DIR = KERNEL_ROOT / "build"

if not BUILD_DIR.is_dir():
    pytest.skip(
        f"{BUILD_DIR} does not exist: run `kernel-builder build examples/activation` first",
        allow_module_level=True,
    )

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# The kernels compute in float32 and round once; the references below do the
# same, so the remaining differences come from exp/tanh implementations and a
# possible one-ulp difference in the final rounding.
TOLERANCES = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
    torch.float16: {"rtol": 2e-3, "atol": 1e-3},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-2},
}


def _load(backend=None):
    from kernel_builder import get_local_kernel

    # Loading may warn about the build itself (e.g. one made from uncommitted
    # changes); that is not what these tests check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return get_local_kernel(BUILD_DIR, backend)


@pytest.fixture(scope="module")
def kernel():
    if DEVICE == "cuda":
        return _load()
    try:
        return _load("cpu")
    except FileNotFoundError as exc:
        if torch.version.cuda is not None:
            pytest.skip(f"no GPU and no CPU variant in {BUILD_DIR}: {exc}")
        raise


def _randn(shape, dtype, scale=3.0):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=generator, dtype=torch.float32) * scale
    return x.to(device=DEVICE, dtype=dtype)


def _silu_and_mul_reference(x):
    d = x.shape[-1] // 2
    xf = x.float()
    return (F.silu(xf[..., :d]) * xf[..., d:]).to(x.dtype)


def _gelu_tanh_reference(x):
    return F.gelu(x.float(), approximate="tanh").to(x.dtype)


# --- silu_and_mul -----------------------------------------------------------

SILU_SHAPES = [(2,), (1, 2), (4, 2000), (3, 2050), (7, 5, 514), (16, 8194), (0, 8), (3, 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SILU_SHAPES, ids=str)
def test_silu_and_mul(kernel, shape, dtype):
    x = _randn(shape, dtype)
    y = kernel.silu_and_mul(x)
    assert y.shape == x.shape[:-1] + (x.shape[-1] // 2,)
    assert y.dtype == dtype
    assert y.device == x.device
    torch.testing.assert_close(y, _silu_and_mul_reference(x), **TOLERANCES[dtype])


def test_silu_and_mul_matches_unfused_fp32(kernel):
    # The plain fp32 composition of torch.nn.functional ops.
    x = _randn((33, 1026), torch.float32)
    d = x.shape[-1] // 2
    torch.testing.assert_close(kernel.silu_and_mul(x), F.silu(x[..., :d]) * x[..., d:], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu_and_mul_out_argument(kernel, dtype):
    x = _randn((5, 6, 130), dtype)
    out = torch.full((5, 6, 65), 7.0, device=DEVICE, dtype=dtype)
    result = kernel.silu_and_mul(x, out=out)
    assert result is out
    torch.testing.assert_close(out, _silu_and_mul_reference(x), **TOLERANCES[dtype])


def test_silu_and_mul_odd_last_dim_raises(kernel):
    x = _randn((4, 7), torch.float32)
    with pytest.raises(RuntimeError, match="even"):
        kernel.silu_and_mul(x)


def test_silu_and_mul_out_shape_mismatch_raises(kernel):
    x = _randn((4, 8), torch.float32)
    out = torch.empty((4, 8), device=DEVICE, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="shape"):
        kernel.silu_and_mul(x, out=out)


def test_silu_and_mul_dtype_mismatch_raises(kernel):
    x = _randn((4, 8), torch.float32)
    out = torch.empty((4, 4), device=DEVICE, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="same dtype"):
        kernel.silu_and_mul(x, out=out)


def test_silu_and_mul_non_contiguous_raises(kernel):
    x = _randn((8, 6), torch.float32).t()
    with pytest.raises(RuntimeError, match="contiguous"):
        kernel.silu_and_mul(x)


# --- gelu_tanh --------------------------------------------------------------

GELU_SHAPES = [(1,), (1000,), (1025,), (3, 257), (64, 4097), (2, 3, 5, 7), (0,)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", GELU_SHAPES, ids=str)
def test_gelu_tanh(kernel, shape, dtype):
    x = _randn(shape, dtype)
    y = kernel.gelu_tanh(x)
    assert y.shape == x.shape
    assert y.dtype == dtype
    torch.testing.assert_close(y, _gelu_tanh_reference(x), **TOLERANCES[dtype])


def test_gelu_tanh_matches_torch_fp32_directly(kernel):
    x = _randn((4096,), torch.float32, scale=6.0)
    torch.testing.assert_close(kernel.gelu_tanh(x), F.gelu(x, approximate="tanh"), rtol=1e-5, atol=1e-5)


def test_gelu_tanh_large_tensor(kernel):
    x = _randn((3 * 1024 * 1024 + 3,), torch.float32)
    torch.testing.assert_close(kernel.gelu_tanh(x), _gelu_tanh_reference(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gelu_tanh_out_argument(kernel, dtype):
    x = _randn((5, 333), dtype)
    out = torch.full_like(x, 7.0)
    result = kernel.gelu_tanh(x, out=out)
    assert result is out
    torch.testing.assert_close(out, _gelu_tanh_reference(x), **TOLERANCES[dtype])


def test_gelu_tanh_shape_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((17,), device=DEVICE, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="same shape"):
        kernel.gelu_tanh(x, out=out)


def test_gelu_tanh_dtype_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((16,), device=DEVICE, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="same dtype"):
        kernel.gelu_tanh(x, out=out)


def test_raw_ops_are_registered(kernel):
    x = _randn((2, 6), torch.float32)
    out = torch.empty((2, 3), device=DEVICE, dtype=torch.float32)
    kernel.ops.silu_and_mul(out, x)
    torch.testing.assert_close(out, _silu_and_mul_reference(x), rtol=1e-5, atol=1e-5)
    out = torch.empty_like(x)
    kernel.ops.gelu_tanh(out, x)
    torch.testing.assert_close(out, _gelu_tanh_reference(x), rtol=1e-5, atol=1e-5)
