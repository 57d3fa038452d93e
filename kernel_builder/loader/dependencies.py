"""Kernel dependencies (``kernel-depends``): resolve the whole tree, fetch and verify it, load it bottom-up.

A variant's ``metadata.json`` lists the kernels it needs, each at a major ``version`` (branch ``v<N>``) or a
``revision`` (docs/loading.md). Before a kernel is imported, :func:`resolve_dependencies` finds every
dependency, recursively, through a list of :class:`Source` (``LOCAL_KERNELS`` first, then the Hub; built by
:func:`kernel_builder.loader.local.dependency_sources`): each one trust-checked and its variant chosen from its
metadata alone, so a cycle, a missing kernel or an untrusted publisher anywhere in the tree stops the load
before anything is downloaded. :meth:`DependencyTree.load` then downloads and digest-verifies every variant
(:meth:`DependencyTree.install` alone for ``install_kernel``) and imports them, dependencies before their
dependents, each inside :func:`~kernel_builder.loader.dependency_context.providing` its own dependencies.

Errors name the chain from the kernel being loaded to the failing dependency (``org/a -> org/b -> org/a``).
This module knows neither the Hub nor local directories: the sources do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.loader.errors import KernelDependencyError, KernelIntegrityError, UntrustedKernelError
from kernel_builder.loader.importer import load_variant
from kernel_builder.loader.sequence import Located

__all__ = [
    "MAX_DEPTH",
    "DependencyTree",
    "LazySource",
    "Located",
    "Source",
    "Sources",
    "describe",
    "resolve_dependencies",
]

#: Far deeper than any real tree; a deeper one is a hostile or broken repository chain, refused.
MAX_DEPTH = 32


class Source(Protocol):
    """One place dependencies are looked for."""

    def locate(self, dependency: KernelDependency) -> Located | None:
        """The dependency's variant, or ``None`` when this source does not provide it (the next one is asked).

        Raises when it should provide it and cannot: no such repository, version or revision, no compatible
        variant, an untrusted publisher.
        """
        ...


class Sources(list["Source"]):
    """The sources of one load's dependencies, in the order they are asked; what the load sequence resolves
    dependencies with (:class:`kernel_builder.loader.sequence.DependencyResolver`)."""

    def resolve(self, root: str, depends: tuple[KernelDependency, ...]) -> DependencyTree:
        return resolve_dependencies(root, depends, self)


class LazySource:
    """A source made on first use: the Hub source imports the Hub client, which a tree found locally never
    needs."""

    def __init__(self, make: Callable[[], Source]) -> None:
        self._make = make
        self._source: Source | None = None

    def locate(self, dependency: KernelDependency) -> Located | None:
        if self._source is None:
            self._source = self._make()
        return self._source.locate(dependency)


def describe(dependency: KernelDependency) -> str:
    """``org/b (version 1)`` or ``org/b (revision 'main')``."""
    if dependency.version is not None:
        return f"{dependency.repo_id} (version {dependency.version})"
    return f"{dependency.repo_id} (revision {dependency.revision!r})"


def _chain(chain: Sequence[str]) -> str:
    return " -> ".join(chain)


@dataclass
class _Node:
    dependency: KernelDependency
    located: Located
    children: tuple[_Node, ...]
    fetched: tuple[Path, Metadata] | None = None
    module: ModuleType | None = field(default=None, repr=False)


@dataclass
class DependencyTree:
    """The resolved dependencies of one kernel (``root``): direct ones in ``nodes``, each with its own."""

    root: str
    nodes: tuple[_Node, ...]

    @property
    def repo_ids(self) -> tuple[str, ...]:
        """The direct dependencies' repository ids, in ``kernel-depends`` order."""
        return tuple(node.dependency.repo_id for node in self.nodes)

    def install(self) -> None:
        """Download and digest-verify every variant of the tree, dependencies before their dependents."""
        for node in self.nodes:
            _install(node, (self.root,))

    def load(self) -> dict[str, ModuleType]:
        """Install the tree, import it bottom-up; the root's direct dependencies by repository id."""
        self.install()
        return {node.dependency.repo_id: _load(node) for node in self.nodes}


def resolve_dependencies(
    root: str, depends: Sequence[KernelDependency], sources: Sequence[Source]
) -> DependencyTree:
    """Find every dependency of ``depends`` (the ``kernel-depends`` of the kernel named ``root``), recursively.

    Nothing is downloaded but ``metadata.json`` files. Raises :class:`KernelDependencyError` for a cycle (a
    repository reached again from itself) or a dependency no source provides, naming the chain; an untrusted
    publisher raises :class:`UntrustedKernelError` with the chain.
    """
    seen: dict[KernelDependency, _Node] = {}
    return DependencyTree(root, tuple(_resolve(dep, (root,), sources, seen) for dep in depends))


def _resolve(
    dependency: KernelDependency,
    chain: tuple[str, ...],
    sources: Sequence[Source],
    seen: dict[KernelDependency, _Node],
) -> _Node:
    path = (*chain, dependency.repo_id)
    if dependency.repo_id in chain:
        raise KernelDependencyError(
            f"kernel dependency cycle: {_chain(path)}; a kernel cannot depend on itself, directly or through "
            f"other kernels: remove one of these kernel-depends entries",
            path,
        )
    if len(chain) > MAX_DEPTH:
        raise KernelDependencyError(
            f"kernel dependencies nested more than {MAX_DEPTH} deep: {_chain(path)}; refusing the tree", path
        )
    known = seen.get(dependency)
    if known is not None:  # reached again through another branch: its subtree was checked when first found
        return known
    located = _locate(dependency, path, sources)
    children = tuple(_resolve(child, path, sources, seen) for child in located.metadata.kernel_depends)
    node = _Node(dependency, located, children)
    seen[dependency] = node
    return node


def _locate(dependency: KernelDependency, path: tuple[str, ...], sources: Sequence[Source]) -> Located:
    where = f"kernel dependency {_chain(path)}"
    try:
        for source in sources:
            located = source.locate(dependency)
            if located is not None:
                return located
    except (UntrustedKernelError, KernelIntegrityError) as error:
        raise type(error)(f"{where}: {error}") from error
    except KernelDependencyError:
        raise
    except (FileNotFoundError, LookupError, ValueError) as error:
        raise KernelDependencyError(
            f"{where}: cannot resolve {describe(dependency)}: {error}", path
        ) from error
    except Exception as error:  # a network or authentication failure keeps its type; the note says where
        add_note = getattr(error, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"while resolving {where}, {describe(dependency)}")
        raise
    raise KernelDependencyError(f"{where}: no source provides {describe(dependency)}", path)


def _install(node: _Node, chain: tuple[str, ...]) -> tuple[Path, Metadata]:
    path = (*chain, node.dependency.repo_id)
    for child in node.children:
        _install(child, path)
    if node.fetched is None:
        try:
            directory, metadata = node.located.fetch()
        except KernelIntegrityError as error:
            raise KernelIntegrityError(f"kernel dependency {_chain(path)}: {error}") from error
        if metadata.kernel_depends != node.located.metadata.kernel_depends:
            raise KernelIntegrityError(
                f"kernel dependency {_chain(path)}: {node.located.label}: the downloaded {METADATA_FILE} lists "
                f"other kernel-depends than the one resolved before the download; refusing it"
            )
        node.fetched = (directory, metadata)
    return node.fetched


def _load(node: _Node) -> ModuleType:
    if node.module is None:
        dependencies = {child.dependency.repo_id: _load(child) for child in node.children}
        assert node.fetched is not None  # install() ran first
        directory, metadata = node.fetched
        node.module = load_variant(
            directory, metadata=metadata, repo_info=node.located.repo_info, dependencies=dependencies
        )
    return node.module
