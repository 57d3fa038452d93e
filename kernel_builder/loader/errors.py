"""The loader's error types (docs/loading.md).

Each belongs to kernel-builder's one hierarchy (:class:`kernel_builder.errors.KernelBuilderError`, exit 1 on the
command line) and also subclasses the builtin exception upstream's ``kernels`` loader raises in the same situation,
so existing ``except FileNotFoundError`` / ``except ValueError`` clauses keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kernel_builder.errors import KernelBuilderError

if TYPE_CHECKING:
    from kernel_builder.formats.dependencies import PythonDependency
    from kernel_builder.loader.decisions import Decision

__all__ = [
    "KernelDependencyError",
    "KernelIntegrityError",
    "KernelNotLockedError",
    "LoaderTooOldError",
    "MissingPythonDependencyError",
    "NoCompatibleVariantError",
    "UntrustedKernelError",
]


class NoCompatibleVariantError(FileNotFoundError, KernelBuilderError):
    """No variant directory suits this environment; ``decisions`` holds each one's verdict, best first."""

    def __init__(self, message: str, decisions: Sequence[Decision] = ()) -> None:
        # One argument only: OSError reads two as (errno, strerror).
        super().__init__(message)
        self.decisions: tuple[Decision, ...] = tuple(decisions)


class KernelIntegrityError(ValueError, KernelBuilderError):
    """A variant's files differ from its ``metadata.json`` digest or from its lock-file hash."""


class UntrustedKernelError(ValueError, KernelBuilderError):
    """The publisher of a Hub kernel is not trusted (and ``trust_remote_code`` was not given)."""


class KernelNotLockedError(ValueError, KernelBuilderError):
    """A locked load found no lock file that lists the repository."""


class KernelDependencyError(ValueError, KernelBuilderError):
    """A kernel's ``kernel-depends`` cannot be satisfied: a dependency cycle, or a dependency that cannot be found.

    ``chain`` is the path from the kernel being loaded to the failing dependency (repository ids, the first one
    a path for ``get_local_kernel``).
    """

    def __init__(self, message: str, chain: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.chain: tuple[str, ...] = tuple(chain)


class LoaderTooOldError(RuntimeError, KernelBuilderError):
    """A build's ``kernels-minver`` names a newer ``kernels`` API than this loader implements."""


class MissingPythonDependencyError(ImportError, KernelBuilderError):
    """Packages a kernel's ``python-depends`` needs here are not installed; ``dependencies`` lists each one.

    An ``ImportError`` (as upstream raises) whose ``name`` is the first missing module; the build's import check
    reads ``dependencies`` to name every missing package instead of failing the build.
    """

    def __init__(self, message: str, dependencies: Sequence[PythonDependency]) -> None:
        super().__init__(message, name=dependencies[0].import_name if dependencies else None)
        self.dependencies: tuple[PythonDependency, ...] = tuple(dependencies)
