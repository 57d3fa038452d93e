"""``get_kernel_dep``: a kernel's own dependencies, handed to its code while it is being imported (docs/loading.md).

A kernel that lists ``kernel-depends`` in its ``build.toml`` gets each of them, already loaded, from
``get_kernel_dep("org/name")`` in its ``__init__`` (and the modules that imports). The loader loads the
dependencies first, then imports the kernel inside :func:`providing`, which sets a context variable for the
duration of that import only: outside it, and for a repository the kernel did not declare, the call fails.

Kernels written for Hugging Face's ``kernels`` call ``kernels.get_kernel_dep`` instead. When that package is
installed, :func:`providing` sets its context variable too, so such a kernel loads here unchanged; it is never
imported otherwise (``kernels`` is not a dependency of this package). This module imports neither torch nor the
Hub client: ``get_kernel_dep`` is cheap to import.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from types import MappingProxyType, ModuleType
from typing import Any, NamedTuple, cast

__all__ = ["get_kernel_dep", "providing"]

logger = logging.getLogger("kernel_builder")

_UPSTREAM = "kernels"


class _Importing(NamedTuple):  # not a dataclass: cheaper to define, and every load imports this module
    """The kernel whose code is running now and the dependencies it declared, by repository id."""

    kernel: str
    dependencies: Mapping[str, ModuleType]
    declared: frozenset[str]  # its metadata's kernel-depends, loaded or not


_current: ContextVar[_Importing | None] = ContextVar("kernel_builder_kernel_deps", default=None)


def get_kernel_dep(repo_id: str) -> ModuleType:
    """The loaded kernel dependency ``repo_id`` of the kernel being imported.

    Call it from a kernel's own code while the loader imports that kernel (its ``__init__.py`` and what that
    imports). ``repo_id`` must be listed in the kernel's ``kernel-depends``: the loader has then resolved,
    verified and loaded it, at the version or revision listed there. Raises ``RuntimeError`` outside a kernel
    import and for a repository the kernel did not declare.
    """
    current = _current.get()
    if current is None:
        raise RuntimeError(
            f"get_kernel_dep({repo_id!r}) works only while a kernel is being imported by the loader "
            f"(get_kernel, get_local_kernel, load_kernel): call it from the kernel's own code, at import time"
        )
    module = current.dependencies.get(repo_id)
    if module is None and repo_id in current.declared:
        raise RuntimeError(
            f"kernel {current.kernel} declares dependency {repo_id!r}, but the code that imported it did not load "
            f"its kernel dependencies; load it with get_kernel or get_local_kernel"
        )
    if module is None:
        declared = ", ".join(sorted(current.dependencies)) or "none"
        raise RuntimeError(
            f"kernel {current.kernel} asked for dependency {repo_id!r}, which it does not declare (declared: "
            f"{declared}); add {{ repo-id = {repo_id!r}, version = <N> }} to kernel-depends in its build.toml "
            f"and rebuild"
        )
    return module


def _upstream_context(dependencies: Mapping[str, ModuleType]) -> AbstractContextManager[Any]:
    """``kernels`` 0.19's ``kernels._internals.deps.use_kernel_deps(dependencies)`` (``kernels.deps`` before 0.19)
    when ``kernels`` is installed, else nothing.

    Only for kernels that declare dependencies: the others have nothing to ask for, and importing ``kernels``
    (with its Hub client) would be wasted.
    """
    if not dependencies:
        return nullcontext()
    if _UPSTREAM not in sys.modules:
        try:
            if importlib.util.find_spec(_UPSTREAM) is None:
                return nullcontext()
        except (ImportError, ValueError):
            return nullcontext()
    try:
        try:  # kernels 0.19 moved it under _internals
            deps_module = importlib.import_module(f"{_UPSTREAM}._internals.deps")
        except ImportError:
            deps_module = importlib.import_module(f"{_UPSTREAM}.deps")
        use_kernel_deps = deps_module.use_kernel_deps
        context = use_kernel_deps(dict(dependencies))
    except Exception as error:  # an installed but broken or different `kernels` must not stop our load
        logger.debug("not providing dependencies to kernels.get_kernel_dep: %s", error)
        return nullcontext()
    return cast(AbstractContextManager[Any], context)


@contextmanager
def providing(
    kernel: str, dependencies: Mapping[str, ModuleType], declared: Iterable[str] = ()
) -> Iterator[None]:
    """Make ``dependencies`` (repository id → loaded module) what ``get_kernel_dep`` returns while the body runs.

    ``kernel`` names the kernel being imported and ``declared`` the repository ids its metadata lists (those
    not in ``dependencies`` were not loaded by the caller), for error messages. Nested uses (a kernel that loads another
    kernel while it is imported) each see their own dependencies; the previous ones are restored on exit.
    """
    state = _Importing(kernel, MappingProxyType(dict(dependencies)), frozenset(declared) | set(dependencies))
    token = _current.set(state)
    try:
        with _upstream_context(dependencies):
            yield
    finally:
        _current.reset(token)
