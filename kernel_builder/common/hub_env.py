"""Where the Hub and its cache are, read from the environment without importing ``huggingface_hub``.

:mod:`kernel_builder.hub` (which imports the client) and the cache-only load of a warm ``get_kernel``
(:mod:`kernel_builder.loader.warm`, which must not import it: the import alone costs more than the whole load)
read the same variables through these functions, so both see the same endpoint, cache and offline mode.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kernel_builder.common.env import hf_flag

__all__ = [
    "DEFAULT_ENDPOINT",
    "cache_location",
    "endpoint",
    "offline_requested",
    "repo_folder_name",
]

DEFAULT_ENDPOINT = "https://huggingface.co"


def endpoint() -> str:
    """``HF_ENDPOINT`` without a trailing ``/``, else the real Hub."""
    return (os.environ.get("HF_ENDPOINT", "").strip() or DEFAULT_ENDPOINT).rstrip("/")


def cache_location() -> tuple[Path, str]:
    """The cache directory and what chose it (a variable's name, or ``the default``), for messages:
    ``KERNELS_CACHE``, else ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    for name in ("KERNELS_CACHE", "HF_HUB_CACHE"):
        value = os.environ.get(name, "").strip()
        if value:
            return Path(os.path.expanduser(value)), name
    home = os.environ.get("HF_HOME", "").strip()
    if home:
        return Path(os.path.expanduser(home)) / "hub", "HF_HOME"
    return Path.home() / ".cache" / "huggingface" / "hub", "the default"


def offline_requested() -> bool:
    """Offline when ``HF_HUB_OFFLINE`` (else ``TRANSFORMERS_OFFLINE``) is on now by ``huggingface_hub``'s rule,
    or an already imported ``huggingface_hub`` was imported in offline mode (it reads the variable once, at
    import; when it is not imported, the variable is all)."""
    if hf_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        return True
    constants = sys.modules.get("huggingface_hub.constants")
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def repo_folder_name(repo_id: str, repo_type: str) -> str:
    """The cache folder of a repo, as ``huggingface_hub`` names it: ``kernels--org--name``."""
    return "--".join([f"{repo_type}s", *repo_id.split("/")])
