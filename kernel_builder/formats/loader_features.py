"""What a build asks of the loader that imports it, and so the ``kernels-minver`` it writes (docs/layout.md).

A variant directory relies on loader behaviour that appeared in a given release of upstream's ``kernels``: the
layout itself, the name format of its variant, the fields of its ``metadata.json``. Each such feature is listed
once here with the first release that has it; a build's ``kernels-minver`` is the newest of its features' first
releases, so an older loader refuses the build with a clear message instead of failing inside the kernel's
import, and a build that uses nothing new keeps the lowest minimum (more loaders can load it). A new loader
feature the builder starts writing is one more member of :class:`LoaderFeature` and one more test in
:func:`features_of`.

The releases are those of ``kernels`` on PyPI: the stable-ABI names came with 0.15.1 (there is no 0.15.0 on
PyPI), kernel dependencies with 0.17.0.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_builder.formats.dependencies import KernelDependency
    from kernel_builder.formats.variants import Variant

__all__ = ["LoaderFeature", "features_of", "kernels_minver"]


class LoaderFeature(enum.Enum):
    """A feature of a build a loader must know; its value is the first ``kernels`` release that has it."""

    #: ``build/<variant>/`` with the package, ``_ops.py`` and ``metadata.json`` with its digest, the
    #: ``torch<XY>-cxx11-<compute>-<cpu>-<os>`` and ``torch-<backend>`` names: what every build writes.
    LAYOUT = (0, 14, 0)
    #: A variant named by the Torch stable ABI it was built for (``torch-stable-abi<XY>-<compute>-<cpu>-<os>``).
    STABLE_ABI_NAME = (0, 15, 1)
    #: ``kernel-depends`` in ``metadata.json``: other Hub kernels the loader fetches and verifies first.
    KERNEL_DEPENDS = (0, 17, 0)

    @property
    def first_release(self) -> tuple[int, int, int]:
        release: tuple[int, int, int] = self.value
        return release


def features_of(
    variant: Variant | None, kernel_depends: tuple[KernelDependency, ...] = ()
) -> frozenset[LoaderFeature]:
    """The loader features a build of ``variant`` relies on (``None``: whatever its name, the layout's), with
    its kernel dependencies (those of its backend)."""
    features = {LoaderFeature.LAYOUT}
    if variant is not None and variant.kind == "torch-stable-abi":
        features.add(LoaderFeature.STABLE_ABI_NAME)
    if kernel_depends:
        features.add(LoaderFeature.KERNEL_DEPENDS)
    return frozenset(features)


def kernels_minver(features: Iterable[LoaderFeature]) -> tuple[int, int, int]:
    """The oldest ``kernels`` release with every one of ``features`` (the layout's, at least)."""
    return max((feature.first_release for feature in features), default=LoaderFeature.LAYOUT.first_release)
