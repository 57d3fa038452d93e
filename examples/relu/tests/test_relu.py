"""Tests for the relu example kernel.

Build the kernel first (`kernel-builder build examples/relu`); the tests load
it from `examples/relu/build/` and compare it with `torch.relu`.
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
        f"{BUILD_DIR} does not exist: run `kernel-builder build examples/relu` first",
        allow_module_level=True,
    )

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# Sizes that are not multiples of common block sizes, plus empty tensors.
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
    if DEVICE == "cuda":
        return _load()
    try:
        return _load("cpu")
    except FileNotFoundError as exc:
        if torch.version.cuda is not None:
            pytest.skip(f"no GPU and no CPU variant in {BUILD_DIR}: {exc}")
        raise


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
    # relu only selects values, so the result is exact in every dtype.
    torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


# Around the 16-byte vector width of every dtype (2, 4 or 8 elements) and the
# multiples of vectors per block and unrolled round.
ODD_SIZES = [2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 255, 257, 4095, 4097, 8 * 256 * 4 + 3, 65537]
# (input offset, out offset) in elements from the start of a fresh allocation:
# aligned, both shifted alike (a scalar head, then vectors), or shifted apart
# (no vector fits both).
OFFSETS = [(0, 0), (1, 1), (3, 3), (7, 7), (1, 0), (0, 5), (2, 3)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("size", ODD_SIZES)
def test_relu_odd_sizes(kernel, dtype, size):
    x = _randn((size,), dtype)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("offsets", OFFSETS, ids=str)
@pytest.mark.parametrize("size", [1, 6, 13, 1000, 4103, 1 << 20])
def test_relu_views_with_offsets(kernel, dtype, offsets, size):
    in_offset, out_offset = offsets
    x = _randn((size + 8,), dtype)[in_offset : in_offset + size]
    out_storage = torch.full((size + 16,), 123.0, device=DEVICE, dtype=dtype)
    out = out_storage[out_offset : out_offset + size]
    assert x.is_contiguous() and out.is_contiguous()
    kernel.relu(x, out=out)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
    # Nothing outside the view was written.
    untouched = torch.cat([out_storage[:out_offset], out_storage[out_offset + size :]])
    assert bool((untouched == 123.0).all())


def test_relu_in_place(kernel):
    x = _randn((3, 1001), torch.float32)
    expected = torch.relu(x)
    kernel.relu(x, out=x)
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_relu_large_tensor(kernel):
    # More elements than one launch of a capped grid covers.
    x = _randn((3 * 1024 * 1024 + 5,), torch.float32)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_special_values(kernel):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -1.5, 2.5], device=DEVICE)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_relu_out_argument(kernel, dtype):
    x = _randn((5, 333), dtype)
    out = torch.full_like(x, 123.0)
    result = kernel.relu(x, out=out)
    assert result is out
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)


def test_relu_raw_op(kernel):
    x = _randn((129,), torch.float32)
    out = torch.empty_like(x)
    kernel.ops.relu(out, x)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)


def test_relu_does_not_modify_input(kernel):
    x = _randn((1000,), torch.float32)
    before = x.clone()
    kernel.relu(x)
    torch.testing.assert_close(x, before, rtol=0, atol=0)


def test_relu_shape_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((17,), device=DEVICE, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="same shape"):
        kernel.relu(x, out=out)


def test_relu_dtype_mismatch_raises(kernel):
    x = _randn((16,), torch.float32)
    out = torch.empty((16,), device=DEVICE, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="same dtype"):
        kernel.relu(x, out=out)


def test_relu_non_contiguous_raises(kernel):
    x = _randn((8, 16), torch.float32).t()
    out = torch.empty((16, 8), device=DEVICE, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="contiguous"):
        kernel.relu(x, out=out)


# --- kernel layers: kernelize -------------------------------------------------


def _marked_model():
    """A small model whose ReLU is marked the way a modelling library marks it;
    kernelize swaps in this kernel's `layers.ReLU`."""
    from torch import nn

    from kernel_builder import use_kernel_forward_from_hub

    @use_kernel_forward_from_hub("ReLU")
    class ReLU(nn.Module):
        def forward(self, x):
            return torch.relu(x)

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 16), ReLU(), nn.Linear(16, 4)).to(DEVICE)


def _kernelize(model, mode, use_fallback=False):
    from kernel_builder import LocalLayerRepository, kernelize, use_kernel_mapping

    mapping = {"ReLU": {DEVICE: LocalLayerRepository(BUILD_DIR, layer_name="ReLU")}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with use_kernel_mapping(mapping, inherit_mapping=False):
            return kernelize(model, mode=mode, use_fallback=use_fallback)


def test_relu_layer_follows_the_kernel_layer_conventions(kernel):
    layer = kernel.layers.ReLU
    assert layer.__init__ is torch.nn.Module.__init__
    assert (layer.has_backward, layer.can_torch_compile) == (False, True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_kernelized_model_matches_the_reference(kernel, dtype):
    from kernel_builder import Mode

    model = _marked_model().to(dtype)
    x = _randn((5, 16), dtype)
    with torch.no_grad():
        reference = model(x)
        _kernelize(model, Mode.INFERENCE)
        assert model[1].forward.__func__ is kernel.layers.ReLU.forward
        assert "forward" not in model[0].__dict__
        torch.testing.assert_close(model(x), reference, rtol=0, atol=0)


def test_training_keeps_the_original_forward(kernel):
    from kernel_builder import Mode
    from kernel_builder.layers import KernelizeError

    model = _kernelize(_kernelize(_marked_model(), Mode.INFERENCE), Mode.TRAINING, use_fallback=True)
    assert "forward" not in model[1].__dict__
    with pytest.raises(KernelizeError, match="has_backward = False"):
        _kernelize(model, Mode.TRAINING)


def test_kernelized_model_under_torch_compile(kernel):
    from kernel_builder import Mode

    torch._dynamo.reset()
    model = _kernelize(_marked_model(), Mode.INFERENCE | Mode.TORCH_COMPILE)
    x = _randn((8, 16), torch.float32)
    with torch.no_grad():
        reference = model(x)
        compiled = torch.compile(
            model, fullgraph=True, backend="inductor" if DEVICE == "cuda" else "aot_eager"
        )
        with warnings.catch_warnings():
            # Inductor's advice on a GPU (e.g. to enable TF32 matmuls) is not what this checks.
            warnings.simplefilter("ignore", UserWarning)
            result = compiled(x)
    # relu is exact, but the compiled graph may compute the Linear layers' bias additions differently.
    torch.testing.assert_close(result, reference, rtol=1e-5, atol=1e-5)
