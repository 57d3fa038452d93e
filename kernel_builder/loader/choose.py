"""Choosing the variant to load: the one chooser every load path uses (docs/loading.md, "How a variant is chosen").

A Hub load (``get_kernel``, a Hub dependency, ``install_kernel``, ``has_kernel``), a load from the cache alone, a
local load (``get_local_kernel``, ``LOCAL_KERNELS``) and a locked load (``load_kernel``, ``get_locked_kernel``)
differ in where the variant names and their ``metadata.json`` come from; they choose among them here, with the
same rules (:func:`~kernel_builder.loader.resolve.resolve_variants`: upstream ``kernels`` 0.19's names, checks
and order, then the GPU-architecture check) and the same error when none suits
(:class:`~kernel_builder.loader.errors.NoCompatibleVariantError`, listing every variant and why).

``check_arch=False`` skips the GPU-architecture check (as the public ``check_arch=`` parameters, which every load
path passes here; ``KERNEL_BUILDER_CHECK_GPU_ARCH=0`` turns it off for every load). The visible GPUs are probed
only when a GPU variant is judged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import kernel_builder.loader.resolve as resolve
from kernel_builder.common.env import env_flag
from kernel_builder.formats.runtime import Environment
from kernel_builder.loader.errors import NoCompatibleVariantError

__all__ = ["CHECK_GPU_ARCH", "choose_variant", "decide", "no_compatible", "preferred"]

logger = logging.getLogger("kernel_builder")

#: ``0``, ``false``, ``no`` or ``off``: no load checks the visible GPUs against a variant's architectures.
CHECK_GPU_ARCH = "KERNEL_BUILDER_CHECK_GPU_ARCH"


def decide(
    names: Iterable[str],
    environment: Environment,
    backend: str,
    metadata: resolve.MetadataLookup | None,
    *,
    check_arch: bool = True,
    first_only: bool = True,
) -> tuple[list[resolve.Verdict], resolve.GpuProbe]:
    """Every variant's verdict, in preference order, and the GPU probe (probed only if a GPU variant was judged).

    ``first_only`` stops the GPU check at the first accepted variant (a load takes the first); ``False`` judges
    them all (``get_kernel_variants``)."""
    probe = resolve.GpuProbe(lambda: resolve.probe_gpus(backend))
    verdicts = resolve.resolve_variants(
        sorted(set(names)),
        environment,
        backend,
        metadata,
        gpus=probe,
        check_gpu_arch=check_arch and env_flag(CHECK_GPU_ARCH, default=True),
        first_only=first_only,
    )
    return verdicts, probe


def no_compatible(
    subject: str, environment_line: str, verdicts: Sequence[resolve.Verdict]
) -> NoCompatibleVariantError:
    """The error of a load that found no variant: the trace in its message, and every verdict in ``decisions``
    in the public form users inspect (:func:`~kernel_builder.loader.decisions.public_decisions`)."""
    from kernel_builder.loader.decisions import public_decisions  # the public classes, only on this error

    message = resolve.describe_no_compatible(subject, environment_line, verdicts)
    return NoCompatibleVariantError(message, public_decisions(verdicts))


def preferred(
    names: Iterable[str],
    environment: Environment,
    backend: str,
    metadata: resolve.MetadataLookup | None,
    *,
    check_arch: bool = True,
) -> str | None:
    """The directory name of the preferred compatible variant among ``names``, or ``None`` without building the
    error: for a caller that has another way to go (the cache-only path falls back to the Hub, which says why)."""
    verdicts, _ = decide(names, environment, backend, metadata, check_arch=check_arch)
    return verdicts[0].variant.variant_str if verdicts and isinstance(verdicts[0], resolve.Accepted) else None


def choose_variant(
    names: Iterable[str],
    environment: Environment,
    backend: str,
    metadata: resolve.MetadataLookup | None,
    *,
    subject: str,
    check_arch: bool = True,
) -> str:
    """The directory name of the preferred compatible variant among ``names``.

    ``metadata(name)`` gives a variant's ``metadata.json`` (read only for the GPU check); ``subject`` names where
    the variants are in the error. Raises :class:`NoCompatibleVariantError` (a ``FileNotFoundError``) with the
    environment and every variant's verdict when none suits.
    """
    verdicts, probe = decide(names, environment, backend, metadata, check_arch=check_arch)
    if verdicts and isinstance(verdicts[0], resolve.Accepted):
        chosen = verdicts[0].variant.variant_str
        logger.debug("%s: chose variant %s", subject, chosen)
        return chosen
    raise no_compatible(subject, resolve.environment_line(environment, backend, probe.probed), verdicts)
