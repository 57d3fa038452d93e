"""kernel-builder: build, publish and load PyTorch compute kernels from a declarative build.toml."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kernel_builder.authoring.benchmark import *  # noqa: F403
    from kernel_builder.authoring.dev import load as load
    from kernel_builder.layers import *  # noqa: F403
    from kernel_builder.loader import *  # noqa: F403

# The public names are the loader's, the layer API's and ``Benchmark``'s (each module's ``__all__`` is the one
# list of them), the development loop's ``load`` and ``__version__``. They are imported on first access so that
# `import kernel_builder` (the CLI, the builder) stays cheap: it pulls in neither the loader nor, through it,
# torch or huggingface_hub. ``Benchmark``'s module imports nothing, so it is looked in first (`from kernel_builder
# import Benchmark` in a benchmark file loads nothing else); the layer API imports the loader, so looking in the
# loader before it is free.
_SOURCES = ("kernel_builder.authoring.benchmark", "kernel_builder.loader", "kernel_builder.layers")
_LOAD = "kernel_builder.authoring.dev"  # `load`: the development loop (builds, then loads)


def _public_names() -> list[str]:
    names = {"__version__", "load"}
    for source in _SOURCES:
        names.update(importlib.import_module(source).__all__)
    return sorted(names)


def _is_submodule(name: str) -> bool:
    """Whether ``kernel_builder.<name>`` is a module or package of this package (found, not imported)."""
    import os.path
    from importlib.machinery import PathFinder

    return PathFinder.find_spec(name, [os.path.dirname(__file__)]) is not None


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = _public_names()
    elif name == "load":
        value = importlib.import_module(_LOAD).load
    elif name.startswith("__") or _is_submodule(name):
        # Probes for module dunders (__path__, __wrapped__, ...) import nothing; nor does a submodule not yet
        # imported: `from kernel_builder import errors` asks for the attribute before importing the submodule,
        # and a miss here lets the import system import it alone.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        for source in _SOURCES:
            module = importlib.import_module(source)
            if name in module.__all__:
                value = getattr(module, name)
                break
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public_names()))
