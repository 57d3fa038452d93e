"""``kernels-minver``: refuse a build that needs a newer loader than this one (docs/loading.md).

A build's ``metadata.json`` may name, as ``kernels-minver``, the oldest release of upstream's ``kernels``
loader that can load it: a newer builder can write builds that rely on loader behaviour older loaders lack.
kernel-builder's own version number says nothing about that, so the version compared is the ``kernels`` API
level this loader implements, :data:`KERNELS_API_VERSION`: a build whose minimum is newer is refused before
any of its code is downloaded or imported, as upstream's loader of that release refuses it.
"""

from __future__ import annotations

from kernel_builder.formats.metadata import Metadata
from kernel_builder.loader.errors import LoaderTooOldError

__all__ = ["KERNELS_API_VERSION", "KERNELS_REQUIREMENT", "check_kernels_minver"]

#: The upstream ``kernels`` release whose loading API this loader implements (and is tested against): the one
#: place the level is written (``kernel-builder test`` installs that release, docs/loading.md compares with it).
KERNELS_API_VERSION = (0, 19, 1)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


#: The ``kernels`` release as a pip requirement (``kernels==0.19.1``).
KERNELS_REQUIREMENT = f"kernels=={_dotted(KERNELS_API_VERSION)}"


def check_kernels_minver(metadata: Metadata, variant: str, where: str) -> None:
    """Raise :class:`LoaderTooOldError` when the build at ``where`` needs a newer ``kernels`` API."""
    required = metadata.kernels_minver
    if required is None or required <= KERNELS_API_VERSION:
        return
    raise LoaderTooOldError(
        f"kernel {metadata.name}, variant {variant} ({where}) requires kernels>={_dotted(required)} "
        f"(kernels-minver in its metadata.json), but this kernel-builder loader implements the kernels "
        f"{_dotted(KERNELS_API_VERSION)} API. Upgrade it (pip install --upgrade kernel-builder), or load an "
        f"older version or revision of the kernel."
    )
