"""ReLU kernel for CPU and CUDA tensors, as a function and as a kernel layer
(`layers.ReLU`)."""

from __future__ import annotations

import torch

from . import layers
from ._ops import ops


def relu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``max(x, 0)`` elementwise.

    ``x`` must be a contiguous float32, float16 or bfloat16 tensor (float64
    works too). When ``out`` is given, it must be contiguous and have the same
    shape, dtype and device as ``x``; the result is written into it and it is
    returned. Otherwise a new tensor is allocated.
    """
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    ops.relu(out, x)
    return out


__all__ = ["layers", "relu"]
