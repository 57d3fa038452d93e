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


# (input offset, out offset) in elements from the start of a fresh allocation:
# aligned, both shifted alike, or shifted apart.
OFFSETS = [(0, 0), (1, 1), (4, 4), (1, 0), (0, 3), (2, 5)]


def _view(dtype, shape, offset, fill=None):
    """A contiguous tensor of ``shape`` starting ``offset`` elements into a larger allocation (and it)."""
    numel = 1
    for size in shape:
        numel *= size
    if fill is None:
        storage = _randn((numel + 16,), dtype)
    else:
        storage = torch.full((numel + 16,), fill, device=DEVICE, dtype=dtype)
    view = storage[offset : offset + numel].view(shape)
    assert view.is_contiguous()
    return view, storage


def _assert_only_view_written(storage, offset, numel, fill):
    untouched = torch.cat([storage[:offset], storage[offset + numel :]])
    assert bool((untouched == fill).all())


# d around the vector widths (2, 4, 8 elements of 16 bytes), whole and not.
SILU_ODD_SHAPES = [(1, 2), (3, 6), (5, 10), (2, 16), (3, 18), (9, 34), (4, 128), (3, 4100), (17, 1000)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SILU_ODD_SHAPES, ids=str)
@pytest.mark.parametrize("offsets", OFFSETS, ids=str)
def test_silu_and_mul_views_with_offsets(kernel, shape, dtype, offsets):
    in_offset, out_offset = offsets
    x, _ = _view(dtype, shape, in_offset)
    out_shape = shape[:-1] + (shape[-1] // 2,)
    out, storage = _view(dtype, out_shape, out_offset, fill=7.0)
    kernel.silu_and_mul(x, out=out)
    torch.testing.assert_close(out, _silu_and_mul_reference(x), **TOLERANCES[dtype])
    _assert_only_view_written(storage, out_offset, out.numel(), 7.0)


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


GELU_ODD_SIZES = [2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 4095, 4097, 8 * 256 * 4 + 3, 65537]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("size", GELU_ODD_SIZES)
def test_gelu_tanh_odd_sizes(kernel, size, dtype):
    x = _randn((size,), dtype)
    torch.testing.assert_close(kernel.gelu_tanh(x), _gelu_tanh_reference(x), **TOLERANCES[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("size", [1, 6, 13, 1000, 4103, 1 << 20])
@pytest.mark.parametrize("offsets", OFFSETS, ids=str)
def test_gelu_tanh_views_with_offsets(kernel, size, dtype, offsets):
    in_offset, out_offset = offsets
    x, _ = _view(dtype, (size,), in_offset)
    out, storage = _view(dtype, (size,), out_offset, fill=7.0)
    kernel.gelu_tanh(x, out=out)
    torch.testing.assert_close(out, _gelu_tanh_reference(x), **TOLERANCES[dtype])
    _assert_only_view_written(storage, out_offset, size, 7.0)


def test_gelu_tanh_non_contiguous_raises(kernel):
    x = _randn((8, 6), torch.float32).t()
    with pytest.raises(RuntimeError, match="contiguous"):
        kernel.gelu_tanh(x, out=torch.empty((6, 8), device=DEVICE))


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


# --- kernel layers: kernelize -----------------------------------------------


def _marked_model():
    """A small model whose activations are marked the way a modelling library
    marks them; kernelize swaps in this kernel's layers."""
    from torch import nn

    from kernel_builder import use_kernel_forward_from_hub

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x):
            d = x.shape[-1] // 2
            return F.silu(x[..., :d]) * x[..., d:]

    @use_kernel_forward_from_hub("GeluTanh")
    class GeluTanh(nn.Module):
        def forward(self, x):
            return F.gelu(x, approximate="tanh")

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), SiluAndMul(), nn.Linear(32, 32), GeluTanh(), nn.Linear(32, 8)).to(
        DEVICE
    )


def _mapping():
    from kernel_builder import LocalLayerRepository

    return {
        name: {DEVICE: LocalLayerRepository(BUILD_DIR, layer_name=name)}
        for name in ("SiluAndMul", "GeluTanh")
    }


def _kernelize(model, mode, use_fallback=False):
    from kernel_builder import kernelize, use_kernel_mapping

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with use_kernel_mapping(_mapping(), inherit_mapping=False):
            return kernelize(model, mode=mode, use_fallback=use_fallback)


def test_layers_follow_the_kernel_layer_conventions(kernel):
    for name in ("SiluAndMul", "GeluTanh"):
        layer = getattr(kernel.layers, name)
        assert layer.__init__ is torch.nn.Module.__init__
        assert (layer.has_backward, layer.can_torch_compile) == (False, True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_kernelized_model_matches_the_reference(kernel, dtype):
    from kernel_builder import Mode

    model = _marked_model().to(dtype)
    x = _randn((4, 7, 32), dtype)
    with torch.no_grad():
        reference = model(x)
        _kernelize(model, Mode.INFERENCE)
        assert model[1].forward.__func__ is kernel.layers.SiluAndMul.forward
        assert model[3].forward.__func__ is kernel.layers.GeluTanh.forward
        assert "forward" not in model[0].__dict__  # unmarked layers are untouched
        result = model(x)
    torch.testing.assert_close(result, reference, **TOLERANCES[dtype])


def test_training_keeps_the_original_forwards(kernel):
    from kernel_builder import Mode
    from kernel_builder.layers import KernelizeError

    model = _kernelize(_kernelize(_marked_model(), Mode.INFERENCE), Mode.TRAINING, use_fallback=True)
    assert "forward" not in model[1].__dict__ and "forward" not in model[3].__dict__
    with pytest.raises(KernelizeError, match="has_backward = False"):
        _kernelize(model, Mode.TRAINING)


def test_kernelized_model_under_torch_compile(kernel):
    """Inductor on a GPU; on the CPU the ahead-of-time eager backend, which traces
    the same graph with fake tensors without compiling C++."""
    from kernel_builder import Mode

    torch._dynamo.reset()
    model = _kernelize(_marked_model(), Mode.INFERENCE | Mode.TORCH_COMPILE)
    assert model[1].forward.__func__ is kernel.layers.SiluAndMul.forward
    x = _randn((8, 32), torch.float32)
    with torch.no_grad():
        reference = model(x)
        compiled = torch.compile(
            model, fullgraph=True, backend="inductor" if DEVICE == "cuda" else "aot_eager"
        )
        with warnings.catch_warnings():
            # Inductor's advice on a GPU (e.g. to enable TF32 matmuls) is not what this checks.
            warnings.simplefilter("ignore", UserWarning)
            result = compiled(x)
    torch.testing.assert_close(result, reference, **TOLERANCES[torch.float32])
