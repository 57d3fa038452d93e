"""Activation kernels for CPU and CUDA tensors: SiLU-and-multiply and GELU
with the tanh approximation, as functions and as kernel layers (`layers`)."""

from __future__ import annotations

import torch

from . import layers
from ._ops import ops


def silu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2 * d]``.

    The result has shape ``[..., d]``. ``x`` must be contiguous with an even
    last dimension; ``out``, when given, must be contiguous, of the result's
    shape and of ``x``'s dtype and device. Supported dtypes: float32, float16,
    bfloat16 (and float64); half and bfloat16 are computed in float32.
    """
    if out is None:
        shape = x.shape[:-1] + (x.shape[-1] // 2,) if x.dim() > 0 else x.shape
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    ops.silu_and_mul(out, x)
    return out


def gelu_tanh(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return GELU of ``x`` with the tanh approximation, elementwise.

    Matches ``torch.nn.functional.gelu(x, approximate="tanh")``. ``x`` must be
    contiguous; ``out``, when given, must be contiguous and match ``x`` in
    shape, dtype and device.
    """
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    ops.gelu_tanh(out, x)
    return out


__all__ = ["gelu_tanh", "layers", "silu_and_mul"]
