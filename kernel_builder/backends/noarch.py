"""Noarch variants: the pure-Python form every backend can ship (docs/layout.md).

A noarch variant is named ``torch-<token>`` after its backend (:attr:`Backend.noarch_name`: the backend's name);
the legacy ``torch-universal`` stands for every backend at once. This module names them, so that a backend added
to the registry gets its noarch name without another edit; loaders read the word back as written
(:func:`kernel_builder.formats.variants.parse_variant`) and compare it with the selected backend's name.
"""

from __future__ import annotations

from kernel_builder.backends import registry

NOARCH_PREFIX = "torch-"
UNIVERSAL = "universal"
"""The pseudo-backend of the legacy ``torch-universal`` variant."""
UNIVERSAL_NAME = NOARCH_PREFIX + UNIVERSAL


def noarch_name(backend: str) -> str:
    """``"cuda"`` → ``torch-cuda``; ``"cann"`` → ``torch-cann``; ``"universal"`` → ``torch-universal``."""
    if backend == UNIVERSAL:
        return UNIVERSAL_NAME
    return NOARCH_PREFIX + registry.get(backend).noarch_name
