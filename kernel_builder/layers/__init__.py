"""Kernel layers: swap hub kernels into a model's marked layers and functions (``kernelize``).

The same names, signatures and semantics as the layer API of Hugging Face's ``kernels`` package, so code
written for one works with the other; kernels load through :mod:`kernel_builder.loader`. See
``docs/kernelize.md``. A modelling library marks layers (:func:`use_kernel_forward_from_hub`); an application
registers a mapping (:func:`register_kernel_mapping`, :func:`use_kernel_mapping`) from layer names to
repositories per device and :class:`Mode`, then calls :func:`kernelize`.

Importing this package does not import Torch; marking a function and kernelizing do.
"""

from __future__ import annotations

from kernel_builder.layers.device import CUDAProperties, Device, ROCMProperties
from kernel_builder.layers.errors import IncompatibleLayerError, KernelizeError, KernelLoadError
from kernel_builder.layers.kernelized import (
    KernelizedFunc,
    KernelizedLayer,
    KernelizedLayers,
    get_kernelized_layers,
)
from kernel_builder.layers.kernelizer import KernelizeDecision, kernelize, kernelize_report
from kernel_builder.layers.mapping import register_kernel_mapping, use_kernel_mapping
from kernel_builder.layers.marks import (
    replace_kernel_forward_from_hub,
    use_kernel_forward_from_hub,
    use_kernel_func_from_hub,
    use_kernelized_func,
)
from kernel_builder.layers.mode import KernelizeFallback, Mode
from kernel_builder.layers.repositories import (
    FuncRepository,
    LayerRepository,
    LocalFuncRepository,
    LocalLayerRepository,
    LockedFuncRepository,
    LockedLayerRepository,
)

__all__ = [
    "CUDAProperties",
    "Device",
    "FuncRepository",
    "IncompatibleLayerError",
    "KernelLoadError",
    "KernelizeDecision",
    "KernelizeError",
    "KernelizeFallback",
    "KernelizedFunc",
    "KernelizedLayer",
    "KernelizedLayers",
    "LayerRepository",
    "LocalFuncRepository",
    "LocalLayerRepository",
    "LockedFuncRepository",
    "LockedLayerRepository",
    "Mode",
    "ROCMProperties",
    "get_kernelized_layers",
    "kernelize",
    "kernelize_report",
    "register_kernel_mapping",
    "replace_kernel_forward_from_hub",
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "use_kernel_mapping",
    "use_kernelized_func",
]
