"""kernel-builder: build, publish and load PyTorch compute kernels from a declarative build.toml."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
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
    "KernelIntegrityError",
    "KernelNotLockedError",
    "LoadedKernel",
    "Metadata",
    "NoCompatibleVariantError",
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
    "load_kernel",
]

# The loader's public names are imported on first access so that `import kernel_builder` (the CLI, the
# builder) stays cheap: it pulls in neither the loader nor, through it, torch or huggingface_hub.
_LOADER_EXPORTS = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in _LOADER_EXPORTS:
        value = getattr(importlib.import_module("kernel_builder.loader"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LOADER_EXPORTS)
