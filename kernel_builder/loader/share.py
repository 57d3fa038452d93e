"""One module per kernel build when a process uses both loaders: ours and Hugging Face's ``kernels``.

Both import a variant under its ``metadata.id``. Ours reuses a module the ``kernels`` package imported first (the
same id and digest, docs/loading.md). The ``kernels`` package does not do the converse on its own, and how it
fails depends on its release line:

- 0.17 keeps a registry of loaded variants by path (``kernels.importer._loaded_kernels``). A variant it did not
  load itself is executed again into a new module under the same id; the submodules already in ``sys.modules``
  are then not executed again, so they are never bound as attributes of the new parent (``kernel._backends``
  raises ``AttributeError``), and ``import <name>`` and ``kernels.get_kernel`` give two different modules.
- 0.18 and 0.19 reuse whatever module ``sys.modules`` holds under the id, after comparing the digest of the
  build being loaded with the one recorded when the module was imported (``_loaded_kernel_metadata``, by id, in
  ``kernels.importer`` for 0.18 and ``kernels._internals.importer`` for 0.19). A module kernel_builder imported
  has no record there, and the comparison fails with ``AssertionError: ... its metadata was not recorded``.

No public interface of the ``kernels`` package lets another loader declare a module it imported, so sharing
needs its private names: :data:`RELEASE_LINES` holds one adapter per release line, each giving one of those
registries a fallback that answers from kernel_builder's own loads (the same id and digest, still the module in
``sys.modules``), recorded the way the ``kernels`` importer records its own. Anything unexpected (another shape
of the module, an unreadable ``metadata.json``) leaves the registry's answer as it was, so the ``kernels``
package behaves as it would without kernel_builder. Nothing else of it changes.

:func:`share_with_kernels`, which the loader calls after each import, installs the fallback: at once when the
importer module is imported already, otherwise through a one-shot import hook that adds it right after that
module is executed (its import is never forced).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kernel_builder.common.env import env_flag

__all__ = ["ENV", "RELEASE_LINES", "ReleaseLine", "share_with_kernels", "shared_line"]

logger = logging.getLogger("kernel_builder")

#: ``0``, ``false``, ``no`` or ``off``: no fallback answers (read at each lookup). The 0.17 line then imports
#: every variant itself; 0.18 and later then fail on a kernel kernel_builder imported, as without kernel_builder.
ENV = "KERNEL_BUILDER_SHARE_WITH_KERNELS"

#: The loader's lookups (``kernel_builder.loader.importer`` passes its own): the module it imported for the build
#: in a variant directory, and the variant directory of the module it imported under a module id.
ByVariant = Callable[[Path], "ModuleType | None"]
ById = Callable[[str], "Path | None"]
_by_variant: ByVariant | None = None
_by_id: ById | None = None


def _upstream_metadata(variant: Path) -> Any:
    """The variant's ``metadata.json`` read by the ``kernels`` package's own reader (its ``Metadata``)."""
    return importlib.import_module("kernels._rust").Metadata.read_from_file(variant / "metadata.json")


class _ByPath(dict[Any, Any]):
    """The 0.17 registry of loaded variants (variant path → ``LoadedKernel``), with a fallback: a miss for a
    variant kernel_builder imported records that module as the ``kernels`` importer records its own loads (its
    ``LoadedKernel``, no repo info), so that its ``get_loaded_kernels()`` lists it too."""

    module_name = "kernels.importer"

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        entry = self._entry(key)
        if entry is None:
            return default
        self[key] = entry
        return entry

    def _entry(self, key: Any) -> Any:
        if _by_variant is None or not isinstance(key, (str, os.PathLike)) or not env_flag(ENV, default=True):
            return None
        variant = Path(key)
        try:
            module = _by_variant(variant)
            if module is None:
                return None
            importer = sys.modules[self.module_name]
            entry = importer.LoadedKernel(metadata=_upstream_metadata(variant), module=module, repo_info=None)
        except Exception as error:  # noqa: BLE001 - never break the kernels package: let it load the variant
            logger.debug("%s: not shared with the kernels package (%s)", variant, error)
            return None
        logger.debug("%s: the kernels package gets the module kernel_builder imported", variant)
        return entry


class _ById(dict[Any, Any]):
    """The 0.18+ record of imported builds (module id → ``Metadata``), with a fallback: a miss for a module
    kernel_builder imported answers the metadata of the variant it was imported from, so the ``kernels``
    importer compares that build's digest with the one it is asked to load (and reuses the module when they
    are the same build, or says they differ), as for a module it imported itself."""

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        if _by_id is None or not isinstance(key, str) or not env_flag(ENV, default=True):
            return default
        try:
            variant = _by_id(key)
            if variant is None:
                return default
            metadata = _upstream_metadata(variant)
        except Exception as error:  # noqa: BLE001 - never break the kernels package: keep its own answer
            logger.debug("%s: not shared with the kernels package (%s)", key, error)
            return default
        logger.debug("%s: the kernels package compares with the build kernel_builder imported", key)
        self[key] = metadata
        return metadata


@dataclass(frozen=True)
class ReleaseLine:
    """Where one release line of the ``kernels`` package keeps the registry its importer consults first, and
    the fallback kernel_builder gives it."""

    releases: str  # the kernels releases it covers, for messages and docs
    module: str
    attribute: str
    registry: type[dict[Any, Any]]


#: Newest first: a module that has the newer line's registry is of that line.
RELEASE_LINES = (
    ReleaseLine("0.19", "kernels._internals.importer", "_loaded_kernel_metadata", _ById),
    ReleaseLine("0.18", "kernels.importer", "_loaded_kernel_metadata", _ById),
    ReleaseLine("0.17", "kernels.importer", "_loaded_kernels", _ByPath),
)
_TARGETS = frozenset(line.module for line in RELEASE_LINES)


def shared_line(module: ModuleType) -> ReleaseLine | None:
    """The release line whose fallback ``module`` (a ``kernels`` importer module) carries, if any."""
    for line in RELEASE_LINES:
        if line.module == module.__name__ and isinstance(
            getattr(module, line.attribute, None), line.registry
        ):
            return line
    return None


def _patch(module: ModuleType) -> bool:
    """Give ``module``'s registry its fallback; whether it has one now."""
    if shared_line(module) is not None:
        return True
    for line in RELEASE_LINES:
        registry = getattr(module, line.attribute, None)
        if line.module == module.__name__ and isinstance(registry, dict):
            setattr(module, line.attribute, line.registry(registry))
            logger.debug(
                "%s (kernels %s): shares the kernels kernel_builder imports", line.module, line.releases
            )
            return True
    logger.debug("%s has none of the registries kernel_builder knows; loaded kernels are not shared", module)
    return False


class _PatchAfterExec(importlib.abc.Loader):
    """Wraps the loader of a ``kernels`` importer module: executes it, restores the real loader, then patches it."""

    def __init__(self, loader: importlib.abc.Loader, hook: _PatchOnImport) -> None:
        self.loader, self.hook = loader, hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        if _patch(module):
            self.hook.remove()

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... for tracebacks and tools
        return getattr(self.loader, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the ``kernels`` importer modules with the other finders and wraps their loader; ignores every other
    name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _TARGETS:
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


def share_with_kernels(by_variant: ByVariant, by_id: ById) -> None:
    """Make the ``kernels`` package's loaders return the modules kernel_builder imported in this process, as the
    two lookups find them (``kernel_builder.loader.importer`` passes its own; no import of it here, which would
    be a cycle).

    Patches the ``kernels`` importer module now if it is imported, else when it is; idempotent.
    """
    global _by_variant, _by_id
    _by_variant, _by_id = by_variant, by_id
    present = [sys.modules[name] for name in _TARGETS if name in sys.modules]
    if any(_patch(module) for module in present):
        return
    if not present and not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
