"""ReLU written in Triton, registered as a Torch custom op.

GPU tensors run the Triton kernel; CPU tensors (or a GPU without Triton
installed) use ``torch.relu``, so the op works everywhere. Triton is optional:
importing this package does not require it.
"""

import warnings
from typing import Optional

import torch

from ._ops import add_op_namespace_prefix, ops

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs usually have no Triton.
    triton = None
    tl = None

_BLOCK_SIZE = 1024

if triton is not None:

    @triton.jit
    def _relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        # 64-bit offsets so tensors with more than 2**31 elements work.
        offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        # `x < 0` is false for NaN, so NaN propagates like in torch.relu.
        y = tl.where(x < 0, tl.zeros_like(x), x)
        tl.store(out_ptr + offsets, y, mask=mask)


_warned_no_triton = False


def _relu_triton(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    if n_elements > 0:
        grid = (triton.cdiv(n_elements, _BLOCK_SIZE),)
        with torch.cuda.device(x.device):
            _relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=_BLOCK_SIZE)
    return out


@torch.library.custom_op(add_op_namespace_prefix("relu"), mutates_args=())
def _relu_op(x: torch.Tensor) -> torch.Tensor:
    if x.is_cuda and triton is not None:
        return _relu_triton(x)
    if x.is_cuda:
        global _warned_no_triton
        if not _warned_no_triton:
            warnings.warn(
                "relu_triton: Triton is not installed; using torch.relu on GPU tensors", stacklevel=2
            )
            _warned_no_triton = True
    # torch.relu allocates a new tensor (a custom op must not return its
    # input); make it contiguous like the Triton path and the fake kernel.
    return torch.relu(x).contiguous()


@torch.library.register_fake(add_op_namespace_prefix("relu"))
def _relu_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _relu_setup_context(ctx, inputs, output) -> None:
    (x,) = inputs
    ctx.save_for_backward(x)


def _relu_backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad_output * (x > 0).to(grad_output.dtype)


torch.library.register_autograd(
    add_op_namespace_prefix("relu"), _relu_backward, setup_context=_relu_setup_context
)


# Optional rather than `X | None`: this file supports Python 3.9 and cannot use
# `from __future__ import annotations`, whose string annotations Triton's
# `tl.constexpr` parameters and the custom-op schema inference would receive.
def relu(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:  # noqa: UP045
    """Return ``max(x, 0)`` elementwise.

    Works for any shape and dtype that ``torch.relu`` supports. When ``out``
    is given, it must have the same shape, dtype and device as ``x``; the
    result is copied into it and it is returned.
    """
    if out is not None:
        if out.shape != x.shape:
            raise ValueError(
                f"relu: out and x must have the same shape, got out {tuple(out.shape)} and x {tuple(x.shape)}"
            )
        if out.dtype != x.dtype:
            raise ValueError(f"relu: out and x must have the same dtype, got out {out.dtype} and x {x.dtype}")
        if out.device != x.device:
            raise ValueError(
                f"relu: out and x must be on the same device, got out on {out.device} and x on {x.device}"
            )
    result = ops.relu(x)
    if out is None:
        return result
    out.copy_(result)
    return out


__all__ = ["relu"]
