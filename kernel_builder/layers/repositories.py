"""Where a mapping's kernel layers come from: a Hub repository, a local build, or a commit pinned in
``kernels.lock``; each names a layer class of the kernel's ``layers`` module (``*LayerRepository``) or a
function of the kernel (``*FuncRepository``, kept for code written against them).

Constructing a repository does no I/O beyond finding the lock of a ``Locked*`` one: a model library can build
its mapping at import time. ``load()`` loads the kernel through :mod:`kernel_builder.loader` (so every check
of a plain ``get_kernel`` applies: trust gate, variant choice, digest) and returns the layer class.
Repositories are immutable, compare by value and hash, which lets ``kernelize`` load each one once.

``check_arch`` (default true) is passed to the load: ``False`` skips the check that the variant's declared GPU
architectures include this GPU's, for kernels that run on more than they declare (a Triton fallback, say).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_builder.layers.errors import KernelizeError
from kernel_builder.loader.arguments import check_repo_id, check_revision_arguments, check_trust_argument

if TYPE_CHECKING:
    from torch import nn

    from kernel_builder.loader.caller import LockMatch

__all__ = [
    "FuncRepository",
    "LayerRepository",
    "LocalFuncRepository",
    "LocalLayerRepository",
    "LockedFuncRepository",
    "LockedLayerRepository",
]


def _check_name(kind: str, value: object) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueError(
            f"{kind} must be a Python identifier (a class or function of the kernel), got {value!r}"
        )
    return value


def _trust(value: object) -> bool | tuple[str, ...]:
    """``trust_remote_code`` checked now (True, False or a list of repo ids), kept hashable."""
    check_trust_argument(value)
    if isinstance(value, (list, tuple)):
        return tuple(value)
    assert isinstance(value, bool)
    return value


def _trust_argument(value: bool | tuple[str, ...]) -> bool | list[str]:
    return list(value) if isinstance(value, tuple) else value


def layer_of(kernel: ModuleType, layer_name: str, source: str) -> type[nn.Module]:
    """The class ``layer_name`` of ``kernel.layers``; :class:`KernelizeError` naming ``source`` otherwise."""
    layers = getattr(kernel, "layers", None)
    if not isinstance(layers, ModuleType):
        hint = "Its package defines no layers module."
        try:
            present = importlib.util.find_spec(f"{kernel.__name__}.layers") is not None
        except (ImportError, ValueError):
            present = False
        if present:
            hint = (
                "Its package has a layers module, but __init__.py does not import it: add "
                "`from . import layers`."
            )
        raise KernelizeError(
            f"kernel {source} has no `layers` attribute, so it provides no kernel layers. {hint}"
        )
    layer = getattr(layers, layer_name, None)
    if layer is None:
        available = sorted(
            name
            for name, value in vars(layers).items()
            if inspect.isclass(value) and not name.startswith("_")
        )
        listed = ", ".join(available) if available else "none"
        raise KernelizeError(
            f"kernel {source} has no layer {layer_name!r} in its layers module (classes there: {listed})"
        )
    return layer  # type: ignore[no-any-return]


def function_of(kernel: ModuleType, func_name: str, source: str) -> type[nn.Module]:
    """The function ``func_name`` of ``kernel`` as a module class (see :func:`~.marks.function_layer`)."""
    from kernel_builder.layers.marks import function_layer

    func = getattr(kernel, func_name, None)
    if func is None or not callable(func):
        raise KernelizeError(f"kernel {source} has no function {func_name!r}")
    return function_layer(func)


class _Repository:
    """A kernel source (:meth:`_kernel`, :meth:`_source_key`, :attr:`label`, in the subclasses below) and one
    layer class or function of it. Equality and hashing are by value."""

    _kind = "layer"  # or "function"
    _name: str

    def _kernel(self) -> ModuleType:
        raise NotImplementedError

    def _source_key(self) -> tuple[object, ...]:
        raise NotImplementedError

    @property
    def label(self) -> str:
        """Where the kernel comes from, for messages."""
        raise NotImplementedError

    def load(self) -> type[nn.Module]:
        """Load the kernel and return the layer class (or the function, as a layer class)."""
        if self._kind == "layer":
            return layer_of(self._kernel(), self._name, self.label)
        return function_of(self._kernel(), self._name, self.label)

    def _key(self) -> tuple[object, ...]:
        return (*self._source_key(), self._name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Repository) and type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __str__(self) -> str:
        return f"{self.label}, {self._kind} {self._name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class _Layer(_Repository):
    @property
    def layer_name(self) -> str:
        return self._name


class _Function(_Repository):
    _kind = "function"

    @property
    def func_name(self) -> str:
        return self._name


class _Hub(_Repository):
    def _init_hub(
        self,
        repo_id: str,
        revision: str | None,
        version: int | None,
        trust_remote_code: bool | list[str],
        user_agent: str | dict[str, Any] | None,
        check_arch: bool,
    ) -> None:
        check_revision_arguments(version, revision)
        self.repo_id = check_repo_id(repo_id)
        self.revision = revision
        self.version = version
        self._trust_remote_code = _trust(trust_remote_code)
        self._user_agent = dict(user_agent) if isinstance(user_agent, dict) else user_agent
        self.check_arch = bool(check_arch)

    def _kernel(self) -> ModuleType:
        from kernel_builder.loader.warm import get_kernel

        return get_kernel(
            self.repo_id,
            version=self.version,
            revision=self.revision,
            trust_remote_code=_trust_argument(self._trust_remote_code),
            user_agent=self._user_agent,
            check_arch=self.check_arch,
        )

    def _source_key(self) -> tuple[object, ...]:
        return (self.repo_id, self.revision, self.version, self._trust_remote_code, self.check_arch)

    @property
    def label(self) -> str:
        at = f"version {self.version}" if self.version is not None else f"revision {self.revision}"
        return f"{self.repo_id} ({at})"


class LayerRepository(_Layer, _Hub):
    """Layer ``layer_name`` of the Hub kernel ``repo_id`` at ``version=`` (branch ``v<N>``) or ``revision=``.

    ``trust_remote_code`` and ``user_agent`` are passed to ``get_kernel``.
    """

    def __init__(
        self,
        repo_id: str,
        *,
        layer_name: str,
        revision: str | None = None,
        version: int | None = None,
        trust_remote_code: bool | list[str] = False,
        user_agent: str | dict[str, Any] | None = None,
        check_arch: bool = True,
    ) -> None:
        self._init_hub(repo_id, revision, version, trust_remote_code, user_agent, check_arch)
        self._name = _check_name("layer_name", layer_name)


class FuncRepository(_Function, _Hub):
    """Function ``func_name`` of the Hub kernel ``repo_id``, used as a layer (prefer
    :class:`LayerRepository`)."""

    def __init__(
        self,
        repo_id: str,
        *,
        func_name: str,
        revision: str | None = None,
        version: int | None = None,
        trust_remote_code: bool | list[str] = False,
        check_arch: bool = True,
    ) -> None:
        self._init_hub(repo_id, revision, version, trust_remote_code, None, check_arch)
        self._name = _check_name("func_name", func_name)


class _Local(_Repository):
    def _init_local(self, repo_path: str | os.PathLike[str], check_arch: bool) -> None:
        if not isinstance(repo_path, (str, os.PathLike)):
            raise TypeError(f"repo_path must be a path, got {repo_path!r}")
        self.repo_path = Path(os.path.abspath(repo_path))
        self.check_arch = bool(check_arch)

    def _kernel(self) -> ModuleType:
        from kernel_builder.loader.local import get_local_kernel

        return get_local_kernel(self.repo_path, check_arch=self.check_arch)

    def _source_key(self) -> tuple[object, ...]:
        return (self.repo_path, self.check_arch)

    @property
    def label(self) -> str:
        return f"local kernel {self.repo_path}"


class LocalLayerRepository(_Layer, _Local):
    """Layer ``layer_name`` of a local kernel: a kernel root with ``build/``, a ``build/`` directory or one
    variant directory (as ``get_local_kernel`` accepts)."""

    def __init__(
        self, repo_path: str | os.PathLike[str], *, layer_name: str, check_arch: bool = True
    ) -> None:
        self._init_local(repo_path, check_arch)
        self._name = _check_name("layer_name", layer_name)


class LocalFuncRepository(_Function, _Local):
    """Function ``func_name`` of a local kernel, used as a layer (prefer :class:`LocalLayerRepository`)."""

    def __init__(self, repo_path: str | os.PathLike[str], *, func_name: str, check_arch: bool = True) -> None:
        self._init_local(repo_path, check_arch)
        self._name = _check_name("func_name", func_name)


class _Locked(_Repository):
    """The lock entry is found when the repository is constructed, from the code that constructs it (its
    project's ``kernels.lock``, or its distribution's), or from ``lockfile``; ``KernelNotLockedError`` then.

    ``trust_remote_code`` is passed to the locked load, whose trust gate applies online as for ``get_kernel``
    (the files themselves are checked against the lock).
    """

    def _init_locked(
        self,
        repo_id: str,
        lockfile: str | os.PathLike[str] | None,
        trust_remote_code: object,
        check_arch: bool,
    ) -> None:
        from kernel_builder.loader.caller import find_locked

        check_repo_id(repo_id)
        self._trust_remote_code = _trust(trust_remote_code)
        self.check_arch = bool(check_arch)
        # Frames inside kernel_builder are skipped: the caller is the code constructing the repository.
        self._match: LockMatch = find_locked(repo_id, lockfile, sys._getframe(1))
        self.repo_id = repo_id

    def _kernel(self) -> ModuleType:
        from kernel_builder.loader.locked import get_locked_match

        return get_locked_match(
            self._match,
            trust_remote_code=_trust_argument(self._trust_remote_code),
            check_arch=self.check_arch,
        )

    def _source_key(self) -> tuple[object, ...]:
        return (
            self.repo_id,
            self._match.entry.sha,
            self._match.source,
            self._trust_remote_code,
            self.check_arch,
        )

    @property
    def label(self) -> str:
        return f"{self.repo_id} (locked at {self._match.entry.sha} in {self._match.source})"


class LockedLayerRepository(_Layer, _Locked):
    """Layer ``layer_name`` of the Hub kernel ``repo_id`` at the commit pinned in ``kernels.lock``."""

    def __init__(
        self,
        repo_id: str,
        *,
        lockfile: str | os.PathLike[str] | None = None,
        layer_name: str,
        trust_remote_code: bool | list[str] = False,
        check_arch: bool = True,
    ) -> None:
        self._init_locked(repo_id, lockfile, trust_remote_code, check_arch)
        self._name = _check_name("layer_name", layer_name)


class LockedFuncRepository(_Function, _Locked):
    """Function ``func_name`` of a locked Hub kernel, used as a layer (prefer
    :class:`LockedLayerRepository`)."""

    def __init__(
        self,
        repo_id: str,
        *,
        lockfile: str | os.PathLike[str] | None = None,
        func_name: str,
        trust_remote_code: bool | list[str] = False,
        check_arch: bool = True,
    ) -> None:
        self._init_locked(repo_id, lockfile, trust_remote_code, check_arch)
        self._name = _check_name("func_name", func_name)
