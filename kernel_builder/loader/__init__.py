"""The kernel loader: find the variant that suits this environment, verify it and import it.

Layers, each its own module: :mod:`~kernel_builder.loader.resolve` judges and sorts variant names (pure),
:mod:`~kernel_builder.loader.importer` verifies and imports one variant directory (refusing a build that needs
a newer loader, :mod:`~kernel_builder.loader.minver`; sharing each module with the ``kernels`` package,
:mod:`~kernel_builder.loader.share`; making it importable under its package name,
:mod:`~kernel_builder.loader.alias`), :mod:`~kernel_builder.loader.local` loads from local directories and
``LOCAL_KERNELS`` (warning when a local build is older than its sources, :mod:`~kernel_builder.loader.stale`),
and :mod:`~kernel_builder.loader.remote` loads from the Hub (through :mod:`kernel_builder.hub`, the only module
that makes HTTP requests; arguments checked by :mod:`~kernel_builder.loader.arguments`; ``get_kernel`` first
tries the Hub cache alone, without the Hub client, in :mod:`~kernel_builder.loader.warm`, trusting the
resolutions recorded by :mod:`~kernel_builder.loader.hubcache`) behind the trust gate of
:mod:`~kernel_builder.loader.trust` and, when required, the Sigstore check of
:mod:`~kernel_builder.loader.signatures`; :mod:`~kernel_builder.loader.locked` loads the commits pinned in a
``kernels.lock``. A kernel's own kernel dependencies are resolved, fetched and loaded before it by
:mod:`~kernel_builder.loader.dependencies` (the Hub half in :mod:`~kernel_builder.loader.hub_dependencies`),
and its code gets them from ``get_kernel_dep`` (:mod:`~kernel_builder.loader.dependency_context`). Locks: the
file format and the variant hash are :mod:`kernel_builder.formats.lockfile`'s; here
:mod:`~kernel_builder.loader.lock` writes a project's lock (``kernel-builder lock``),
:mod:`~kernel_builder.loader.download` fetches what it pins (``kernel-builder download``),
:mod:`~kernel_builder.loader.caller` finds the lock of the calling code and :mod:`~kernel_builder.loader.lockcheck`
checks files against a lock entry. :mod:`~kernel_builder.loader.describe` reports what a Hub repository holds
without running it (``info``, ``versions``, ``verify-signature``); the errors are
:mod:`~kernel_builder.loader.errors`'. The loader never prints: it warns with ``warnings.warn`` and logs to the
``kernel_builder`` logger.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kernel_builder.formats.metadata import Metadata
from kernel_builder.loader.dependency_context import get_kernel_dep
from kernel_builder.loader.errors import (
    KernelDependencyError,
    KernelIntegrityError,
    KernelNotLockedError,
    LoaderTooOldError,
    NoCompatibleVariantError,
    UntrustedKernelError,
)
from kernel_builder.loader.importer import LoadedKernel, RepoInfo, get_loaded_kernels
from kernel_builder.loader.local import get_local_kernel, parse_local_kernels

if TYPE_CHECKING:
    from kernel_builder.loader.decisions import VariantAccepted, VariantRejected
    from kernel_builder.loader.locked import get_locked_kernel, load_kernel
    from kernel_builder.loader.remote import get_kernel_variants, has_kernel, install_kernel
    from kernel_builder.loader.warm import get_kernel

__all__ = [
    "KernelDependencyError",
    "KernelIntegrityError",
    "KernelNotLockedError",
    "LoadedKernel",
    "LoaderTooOldError",
    "Metadata",
    "NoCompatibleVariantError",
    "RepoInfo",
    "UntrustedKernelError",
    "VariantAccepted",
    "VariantRejected",
    "get_kernel",
    "get_kernel_dep",
    "get_kernel_variants",
    "get_loaded_kernels",
    "get_local_kernel",
    "get_locked_kernel",
    "has_kernel",
    "install_kernel",
    "load_kernel",
    "parse_local_kernels",
]

# The Hub half imports huggingface_hub (a few hundred milliseconds): load it on first use, so that local loads
# and the CLI do not pay for it; so are the decisions users inspect (their variant classes), which a load does
# not build. Name → module that defines it.
_LAZY = {
    "VariantAccepted": "kernel_builder.loader.decisions",
    "VariantRejected": "kernel_builder.loader.decisions",
    "get_kernel": "kernel_builder.loader.warm",  # the cache first, the Hub client only when needed
    "get_kernel_variants": "kernel_builder.loader.remote",
    "has_kernel": "kernel_builder.loader.remote",
    "install_kernel": "kernel_builder.loader.remote",
    "get_locked_kernel": "kernel_builder.loader.locked",
    "load_kernel": "kernel_builder.loader.locked",
}
_REMOTE_EXPORTS = frozenset(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _REMOTE_EXPORTS)
