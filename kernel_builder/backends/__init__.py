"""Compute backends: one module per backend, gathered in one registry (docs/backends.md).

``from kernel_builder import backends`` then ``backends.get("cuda").needs_nvcc``, ``backends.names()``, … The
built-in backends are registered here, in the order messages list them. Cheap to import: nothing heavy and
nothing of the build, loader or formats packages.
"""

from __future__ import annotations

from kernel_builder.backends import cann, cpu, cuda, metal, neuron, rocm, tpu, xpu
from kernel_builder.backends.registry import *  # noqa: F403  (the registry's API is this package's)
from kernel_builder.backends.registry import __all__ as __all__
from kernel_builder.backends.registry import register

for _module in (cpu, cuda, rocm, xpu, metal, neuron, tpu, cann):
    register(_module.BACKEND)
del _module
