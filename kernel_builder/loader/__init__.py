"""The kernel loader: find the variant that suits this environment, verify it and import it.

Layers, each its own module: :mod:`~kernel_builder.loader.resolve` judges and sorts variant names (pure),
:mod:`~kernel_builder.loader.importer` verifies and imports one variant directory, and
:mod:`~kernel_builder.loader.local` loads from local directories and ``LOCAL_KERNELS``. The loader never
prints: it warns with ``warnings.warn`` and logs to the ``kernel_builder`` logger.
"""

from __future__ import annotations

from kernel_builder.loader.errors import (
    KernelIntegrityError,
    KernelNotLockedError,
    NoCompatibleVariantError,
    UntrustedKernelError,
)
from kernel_builder.loader.importer import LoadedKernel, RepoInfo, get_loaded_kernels
from kernel_builder.loader.local import get_local_kernel, parse_local_kernels
from kernel_builder.loader.resolve import VariantAccepted, VariantRejected
from kernel_builder.metadata import Metadata

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
    "get_loaded_kernels",
    "get_local_kernel",
    "parse_local_kernels",
]
