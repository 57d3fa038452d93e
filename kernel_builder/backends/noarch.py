"""Noarch variants: the pure-Python form every backend can ship (docs/layout.md).

A noarch variant is named ``torch-<token>`` after its backend (:attr:`Backend.noarch_name`: the backend's name,
``npu`` for cann); the legacy ``torch-universal`` stands for every backend at once. This module maps between
those directory names and the registered backends, so that a backend added to the registry gets its noarch
name without another edit.
"""

from __future__ import annotations

from kernel_builder.backends import registry

NOARCH_PREFIX = "torch-"
UNIVERSAL = "universal"
"""The pseudo-backend of the legacy ``torch-universal`` variant."""
UNIVERSAL_NAME = NOARCH_PREFIX + UNIVERSAL


def noarch_name(backend: str) -> str:
    """``"cuda"`` → ``torch-cuda``; ``"cann"`` → ``torch-npu``; ``"universal"`` → ``torch-universal``."""
    if backend == UNIVERSAL:
        return UNIVERSAL_NAME
    return NOARCH_PREFIX + registry.get(backend).noarch_name


def backend_for_token(token: str) -> str | None:
    """The backend whose noarch directory is ``torch-<token>`` (also accepts its name): ``npu`` → ``cann``;
    ``universal`` → ``universal``; ``None`` when none is."""
    if token == UNIVERSAL:
        return UNIVERSAL
    for backend in registry.all_backends():
        if token in (backend.noarch_name, backend.name):
            return backend.name
    return None


def tokens() -> tuple[str, ...]:
    """Every noarch token, ``universal`` last (for messages)."""
    return (*(b.noarch_name for b in registry.all_backends()), UNIVERSAL)
