"""The decisions users get: upstream ``kernels`` 0.19's ``VariantAccepted`` and ``VariantRejected``
(docs/loading.md, "Inspecting the variants").

``get_kernel_variants`` and ``NoCompatibleVariantError.decisions`` hand these out;
their ``variant`` is the structured form of :mod:`kernel_builder.formats.variant_model`, with upstream's classes,
so code that inspects it runs unchanged with either package. The loader itself decides on its own verdicts
(:class:`~kernel_builder.loader.resolve.Accepted`, :class:`~kernel_builder.loader.resolve.Rejected`), which hold
our flat parsed name; :func:`public_decisions` converts them where they reach a user. This module and the one it
imports are loaded only then (``kernel_builder.loader`` exports these names lazily): a load that finds its
variant builds none of these objects.

The annotations name real classes, importable here, so ``typing.get_type_hints`` reads them as it reads
upstream's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

from kernel_builder.formats.variant_model import Variant, from_parsed
from kernel_builder.loader.resolve import Rejected, Verdict

__all__ = ["Decision", "VariantAccepted", "VariantRejected", "public_decisions"]


@dataclass(unsafe_hash=True)  # mutable and hashable, as upstream's
class VariantAccepted:
    """A variant that can load here; ``variant.variant_str`` is its directory name."""

    variant: Variant


@dataclass(unsafe_hash=True)
class VariantRejected:
    """A variant that cannot load here, with the first failed check naming both sides' values (our wording)."""

    variant: Variant
    reason: str


Decision: TypeAlias = VariantAccepted | VariantRejected


def public_decisions(verdicts: Iterable[Verdict]) -> list[Decision]:
    """The loader's verdicts as users get them, in the same order, each variant in its structured form."""
    return [
        VariantRejected(from_parsed(verdict.variant), verdict.reason)
        if isinstance(verdict, Rejected)
        else VariantAccepted(from_parsed(verdict.variant))
        for verdict in verdicts
    ]
