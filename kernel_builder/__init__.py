"""kernel-builder: build, publish and load PyTorch compute kernels from a declarative build.toml."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kernel_builder.authoring.dev import load
    from kernel_builder.layers import (
        CUDAProperties,
        Device,
        FuncRepository,
        KernelizeFallback,
        LayerRepository,
        LocalFuncRepository,
        LocalLayerRepository,
        LockedFuncRepository,
        LockedLayerRepository,
        Mode,
        ROCMProperties,
        kernelize,
        register_kernel_mapping,
        replace_kernel_forward_from_hub,
        use_kernel_forward_from_hub,
        use_kernel_func_from_hub,
        use_kernel_mapping,
        use_kernelized_func,
    )
    from kernel_builder.loader import (
        KernelIntegrityError,
        KernelNotLockedError,
        LoadedKernel,
        Metadata,
        NoCompatibleVariantError,
        RepoInfo,
        UntrustedKernelError,
        VariantAccepted,
        VariantRejected,
        get_kernel,
        get_kernel_variants,
        get_loaded_kernels,
        get_local_kernel,
        get_locked_kernel,
        has_kernel,
        install_kernel,
        load_kernel,
    )

__all__ = [
    "CUDAProperties",
    "Device",
    "FuncRepository",
    "KernelIntegrityError",
    "KernelNotLockedError",
    "KernelizeFallback",
    "LayerRepository",
    "LoadedKernel",
    "LocalFuncRepository",
    "LocalLayerRepository",
    "LockedFuncRepository",
    "LockedLayerRepository",
    "Metadata",
    "Mode",
    "NoCompatibleVariantError",
    "ROCMProperties",
    "RepoInfo",
    "UntrustedKernelError",
    "VariantAccepted",
    "VariantRejected",
    "__version__",
    "get_kernel",
    "get_kernel_variants",
    "get_loaded_kernels",
    "get_local_kernel",
    "get_locked_kernel",
    "has_kernel",
    "install_kernel",
    "kernelize",
    "load",
    "load_kernel",
    "register_kernel_mapping",
    "replace_kernel_forward_from_hub",
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "use_kernel_mapping",
    "use_kernelized_func",
]

# The loader's and the layer API's public names are imported on first access so that
# `import kernel_builder` (the CLI, the builder) stays cheap: it pulls in neither the loader nor, through
# it, torch or huggingface_hub. The layer API imports the loader, so looking in the loader first is free.
_SOURCES = ("kernel_builder.loader", "kernel_builder.layers")
_EXPORTS = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name == "load":  # the development loop (builds, then loads): kernel_builder.authoring.dev
        value = importlib.import_module("kernel_builder.authoring.dev").load
        globals()[name] = value
        return value
    if name in _EXPORTS:
        for source in _SOURCES:
            module = importlib.import_module(source)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _EXPORTS)
