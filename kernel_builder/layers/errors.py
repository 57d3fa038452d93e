"""The errors ``kernelize`` raises. Each belongs to kernel-builder's one hierarchy
(:class:`kernel_builder.errors.KernelBuilderError`) and also subclasses the builtin exception upstream's ``kernels``
raises in the same situation, so ``except ValueError`` / ``except TypeError`` / ``except FileNotFoundError``
clauses written for either package keep working."""

from __future__ import annotations

from kernel_builder.errors import KernelBuilderError

__all__ = ["IncompatibleLayerError", "KernelLoadError", "KernelizeError"]


class KernelizeError(ValueError, KernelBuilderError):
    """A marked layer cannot get a kernel as asked: no mapping entry applies (with that fallback turned off),
    the kernel does not support the mode, or the repository has no such layer."""


class IncompatibleLayerError(TypeError, KernelBuilderError):
    """A kernel layer class cannot stand in for the layer it would replace (constructor, members,
    signature)."""


class KernelLoadError(FileNotFoundError, KernelBuilderError):
    """The kernel a mapping names could not be found or has no variant for this environment; the loader's
    error is its ``__cause__``."""

    def __init__(self, message: str) -> None:
        # One argument only: OSError reads two as (errno, strerror).
        super().__init__(message)
