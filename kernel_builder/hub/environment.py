"""What the Hub client reads from the environment at every call (docs/loading.md): the cache directory,
offline mode, telemetry, and the user agent the loader sends."""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from pathlib import Path

from huggingface_hub import constants

from kernel_builder.common.env import hf_flag
from kernel_builder.common.hub_env import cache_location

__all__ = ["cache_dir", "environment_details", "is_offline", "telemetry_disabled", "user_agent"]


def cache_dir() -> Path:
    """``KERNELS_CACHE``, else ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    return cache_location()[0]


def is_offline() -> bool:
    """Offline when ``HF_HUB_OFFLINE`` (else ``TRANSFORMERS_OFFLINE``) is on now, by ``huggingface_hub``'s rule,
    or ``huggingface_hub`` was imported in offline mode."""
    return hf_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") or bool(constants.HF_HUB_OFFLINE)


def telemetry_disabled() -> bool:
    return any(hf_flag(name) for name in ("HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY", "DO_NOT_TRACK"))


def user_agent(
    caller: str | Mapping[str, object] | None, details: Sequence[tuple[str, str | None]] = ()
) -> str | None:
    """The caller's parts, then ``details`` (``("python", "3.12")``, …) unless telemetry is disabled.

    ``huggingface_hub`` puts ``kernel_builder/<version>`` (the library name) in front. Empty parts are left
    out; ``None`` when nothing remains.
    """
    parts: list[str] = []
    if isinstance(caller, str):
        parts += [part.strip() for part in caller.split(";")]
    elif caller is not None:
        parts += [f"{key}/{value}" for key, value in caller.items() if str(key) and str(value)]
    if not telemetry_disabled():
        parts += [f"{key}/{value}" for key, value in details if value]
    parts = [part for part in parts if part]
    return "; ".join(parts) or None


def environment_details(
    backend: str, cpu: str, os_name: str, torch_version: tuple[int, int] | None
) -> list[tuple[str, str | None]]:
    """The loader's user-agent details: Python, backend, platform, file type and Torch version."""
    python = platform.python_version()
    torch = f"{torch_version[0]}.{torch_version[1]}" if torch_version else None
    return [
        ("python", python),
        ("backend", backend),
        ("platform", f"{cpu}-{os_name}"),
        ("file_type", "kernel"),
        ("torch", torch),
    ]
