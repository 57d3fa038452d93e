"""Making a loaded kernel importable under its plain package name, as its own tests expect (``import relu``).

The loader imports every kernel under its unique id (``docs/loading.md``), so nothing named ``relu`` exists
in ``sys.modules``. :func:`expose_as` adds the module there under the package name, with its loaded
submodules, and a finder that maps later ``import relu.x`` to ``<id>.x`` — the same module objects, never a
second copy of the kernel's code or of its native library (the ``kernels`` package's loaders get that same
module too: :mod:`kernel_builder.loader.share`). Meant for test runs (``kernel-builder test``),
where the plain name belongs to the kernel under test; :func:`load_as` loads a local build and exposes it in one
step, the one way ``kernel-builder test``, ``kernel-builder bench`` and a kernel's own test runs
(``kernel_builder.authoring.kernel_tests``) make a kernel importable under its name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import keyword
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["expose_as", "load_as"]


class _SameModule(importlib.abc.Loader):
    """Returns the already-imported real submodule; undoes the import system's renaming of its spec."""

    def __init__(self, real: str) -> None:
        self.real = real
        self._saved: tuple[object, object] | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.real)
        self._saved = (getattr(module, "__spec__", None), getattr(module, "__loader__", None))
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self._saved is not None:
            module.__spec__, module.__loader__ = self._saved  # type: ignore[assignment]


class _AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self, alias: str, real: str) -> None:
        self.alias, self.real = alias, real

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.alias + "."):
            return None
        return importlib.machinery.ModuleSpec(fullname, _SameModule(self.real + fullname[len(self.alias) :]))


def expose_as(module: ModuleType, name: str) -> None:
    """Make ``module`` (a kernel imported under its unique id) importable as ``name`` too.

    Raises ``ValueError`` for a name that is not a plain identifier, and ``ImportError`` when another module
    already holds the name (an installed package of the same name would be shadowed silently otherwise).
    """
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a valid top-level package name")
    existing = sys.modules.get(name)
    if existing is module:
        return
    if existing is not None:
        raise ImportError(
            f"cannot expose the kernel as {name!r}: {existing!r} is already imported under that name"
        )
    real = module.__name__
    prefix = real + "."
    sys.modules[name] = module
    for key, submodule in list(sys.modules.items()):
        if key.startswith(prefix):
            sys.modules.setdefault(name + key[len(real) :], submodule)
    sys.meta_path.insert(0, _AliasFinder(name, real))


def load_as(path: str | os.PathLike[str], name: str) -> ModuleType:
    """Load the local kernel at ``path`` (a project, its ``build/`` or one variant directory; digest verified, as
    every load) and :func:`expose_as` ``name``. Meant for development: the warning that a build comes from
    uncommitted changes is not shown, that being the normal case there."""
    from kernel_builder.loader import get_local_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        module = get_local_kernel(path)
    expose_as(module, name)
    return module
