"""One module per kernel build when a process uses both loaders: ours and Hugging Face's ``kernels``.

Both import a variant under its ``metadata.id``. Ours reuses a module the ``kernels`` package imported first (the
same id and digest, docs/loading.md). The ``kernels`` package does not do the converse: unless it loaded the same
variant path itself, it executes the variant's ``__init__.py`` again into a new module under that id. The
submodules already in ``sys.modules`` are then not executed again, so they are never bound as attributes of
the new parent (``kernel._backends`` raises ``AttributeError``), and ``import <name>`` and
``kernels.get_kernel`` give two different modules.

:func:`share_with_kernels`, which the loader calls after each import, closes that gap: the ``kernels``
package's registry of loaded variants (``kernels.importer._loaded_kernels``, keyed by variant path, the cache
its importer consults before importing) is given a fallback, so a lookup of a variant that this process already
imported through kernel_builder (the same id and the same digest) returns that module, whatever mix of
``import <name>``, ``get_kernel`` and ``get_local_kernel`` of either package a program uses. Nothing else of the
``kernels`` package changes. Its import is not forced: when it is not imported yet, a one-shot import hook adds
the fallback right after ``kernels.importer`` is executed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from kernel_builder.common.env import env_flag

__all__ = ["share_with_kernels"]

logger = logging.getLogger("kernel_builder")

TARGET = "kernels.importer"
_REGISTRY = "_loaded_kernels"
#: ``0``, ``false``, ``no`` or ``off``: the ``kernels`` package imports every variant itself (read at each lookup).
ENV = "KERNEL_BUILDER_SHARE_WITH_KERNELS"

#: The loader's lookup: the module it imported for the build in a variant directory, else ``None``.
Lookup = Callable[[Path], "ModuleType | None"]
_lookup: Lookup | None = None


class SharedRegistry(dict[Any, Any]):
    """The ``kernels`` registry of loaded variants, with a fallback for variants kernel_builder imported.

    A miss looks the variant up among kernel_builder's loads and, when found, records it the way the ``kernels``
    importer records its own loads (its ``LoadedKernel``, with its ``Metadata``, no repo info), so its
    ``get_loaded_kernels()`` lists it too. Anything unexpected leaves the miss a miss: the ``kernels`` package
    then imports the variant itself, as it would without kernel_builder.
    """

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        entry = self._entry(key)
        if entry is None:
            return default
        self[key] = entry
        return entry

    @staticmethod
    def _entry(key: Any) -> Any:
        if _lookup is None or not isinstance(key, (str, os.PathLike)):
            return None
        if not env_flag(ENV, default=True):
            return None
        variant = Path(key)
        try:
            module = _lookup(variant)
            if module is None:
                return None
            importer = sys.modules[TARGET]
            metadata = importlib.import_module("kernels._rust").Metadata.read_from_file(
                variant / "metadata.json"
            )
            entry = importer.LoadedKernel(metadata=metadata, module=module, repo_info=None)
        except Exception as error:  # noqa: BLE001 - never break the kernels package: let it load the variant
            logger.debug("%s: not shared with the kernels package (%s)", variant, error)
            return None
        logger.debug("%s: the kernels package gets the module kernel_builder imported", variant)
        return entry


def _patch(module: ModuleType) -> None:
    registry = getattr(module, _REGISTRY, None)
    if isinstance(registry, SharedRegistry):
        return
    if not isinstance(registry, dict):
        logger.debug("%s has no %s dict; loaded kernels are not shared with it", TARGET, _REGISTRY)
        return
    setattr(module, _REGISTRY, SharedRegistry(registry))


class _PatchAfterExec(importlib.abc.Loader):
    """Wraps the loader of ``kernels.importer``: executes it, restores the real loader, then patches it."""

    def __init__(self, loader: importlib.abc.Loader, hook: _PatchOnImport) -> None:
        self.loader, self.hook = loader, hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        _patch(module)
        self.hook.remove()

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... for tracebacks and tools
        return getattr(self.loader, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds ``kernels.importer`` with the other finders and wraps its loader; ignores every other name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is not None:
                spec.loader = _PatchAfterExec(spec.loader, self)
            return spec
        return None

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def share_with_kernels(lookup: Lookup) -> None:
    """Make the ``kernels`` package's loaders return the modules kernel_builder imported in this process, as
    ``lookup`` finds them (``kernel_builder.loader.importer`` passes its own; no import of it here, which would
    be a cycle).

    Patches ``kernels.importer`` now if it is imported, else when it is; idempotent.
    """
    global _lookup
    _lookup = lookup
    module = sys.modules.get(TARGET)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
