"""Kernel layers for `kernelize`: `ReLU` replaces the forward of a model layer
marked `@use_kernel_forward_from_hub("ReLU")`.

Kernel layers are never instantiated: `kernelize` binds their `forward` to the
model's own layer instance, so they define no `__init__` and no other members.
The op has no autograd formula (`has_backward = False`: `Mode.TRAINING` keeps
the model's own forward) and traces under `torch.compile`
(`can_torch_compile = True`).
"""

from __future__ import annotations

import torch
from torch import nn

from ._ops import ops


class ReLU(nn.Module):
    """`max(x, 0)` elementwise, as `torch.relu`."""

    has_backward = False
    can_torch_compile = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        ops.relu(out, x)
        return out


__all__ = ["ReLU"]
