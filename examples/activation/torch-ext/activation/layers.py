"""Kernel layers for `kernelize`: each replaces the forward of a model layer
marked with the same name (`@use_kernel_forward_from_hub("SiluAndMul")`).

Kernel layers are never instantiated: `kernelize` binds their `forward` to the
model's own layer instance, so they define no `__init__` and no other members.
The ops have no autograd formula (`has_backward = False`: `Mode.TRAINING`
keeps the model's own forward) and trace under `torch.compile`
(`can_torch_compile = True`).
"""

from __future__ import annotations

import torch
from torch import nn

from ._ops import ops


class SiluAndMul(nn.Module):
    """`silu(x[..., :d]) * x[..., d:]` for `x` of shape `[..., 2 * d]`."""

    has_backward = False
    can_torch_compile = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty(x.shape[:-1] + (x.shape[-1] // 2,), dtype=x.dtype, device=x.device)
        ops.silu_and_mul(out, x)
        return out


class GeluTanh(nn.Module):
    """GELU with the tanh approximation, as `F.gelu(x, approximate="tanh")`."""

    has_backward = False
    can_torch_compile = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        ops.gelu_tanh(out, x)
        return out


__all__ = ["GeluTanh", "SiluAndMul"]
